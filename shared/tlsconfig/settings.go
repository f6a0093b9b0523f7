package tlsconfig

import (
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
)

// ClientAuth values: whether a server asks clients for a certificate.
const (
	// ClientAuthRequire refuses a handshake without a client certificate
	// the CA verifies; the peer endpoints then answer only peer_names.
	ClientAuthRequire = "require"
	// ClientAuthVerifyIfGiven verifies a certificate a client sends but
	// takes clients without one: the step before require when turning
	// mutual TLS on in a running cluster.
	ClientAuthVerifyIfGiven = "verify_if_given"
	// ClientAuthNone asks for no client certificate.
	ClientAuthNone = "none"
)

// Settings is the [tls] section, the same keys in storaged, routerd and
// the spangle CLI. The zero value is plaintext.
type Settings struct {
	// CertFile and KeyFile are this program's certificate (PEM, with any
	// intermediates after it) and private key: served by listeners and
	// presented as the client certificate to peers.
	CertFile string `toml:"cert_file"`
	KeyFile  string `toml:"key_file"`
	// CAFile holds the CA certificates (PEM) that peers' certificates,
	// servers' and clients', must chain to.
	CAFile string `toml:"ca_file"`
	// ClientAuth is require (the default with TLS on), verify_if_given
	// or none.
	ClientAuth string `toml:"client_auth"`
	// PeerNames are the identities (DNS or URI SANs, '*' wildcards) of
	// the cluster's storaged nodes: with client_auth = require only they
	// reach the peer endpoints (/_partition/, /_elect/), and a storaged's
	// certificate carrying one is accepted whatever address it
	// registered. Empty: any certificate the CA verified.
	PeerNames []string `toml:"peer_names"`
	// AppTLS (routerd) serves the app-facing bind over TLS too; by
	// default it stays plaintext (a sidecar on loopback needs none).
	AppTLS bool `toml:"app_tls"`
	// AcceptPlaintext serves plaintext as well as TLS on a listener,
	// told apart by the first byte, and lets plaintext clients reach the
	// peer endpoints: only while turning TLS on in a running cluster
	// (README, Security). Refused with client_auth = require.
	AcceptPlaintext bool `toml:"accept_plaintext"`
}

// Enabled reports whether any TLS is configured.
func (s Settings) Enabled() bool { return s.CertFile != "" || s.KeyFile != "" || s.CAFile != "" }

// HasCert reports whether a certificate and key are configured.
func (s Settings) HasCert() bool { return s.CertFile != "" && s.KeyFile != "" }

// clientAuth maps ClientAuth to crypto/tls's: certificates are asked for
// but verified by VerifyConnection against the current pool.
func (s Settings) clientAuth() tls.ClientAuthType {
	switch s.ClientAuth {
	case ClientAuthVerifyIfGiven:
		return tls.RequestClientCert
	case ClientAuthNone:
		return tls.NoClientCert
	}
	return tls.RequireAnyClientCert
}

// Requires reports whether client certificates are required.
func (s Settings) Requires() bool { return s.clientAuth() == tls.RequireAnyClientCert }

// Validate checks the section; server says whether this program serves
// TLS (and so needs cert_file and key_file when TLS is on). Errors name
// the key as "tls.<key>".
func (s Settings) Validate(server bool) error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("config: tls.%s: %s", key, fmt.Sprintf(format, args...)))
	}
	switch s.ClientAuth {
	case "", ClientAuthRequire, ClientAuthVerifyIfGiven, ClientAuthNone:
	default:
		bad("client_auth", "%q is not require, verify_if_given or none", s.ClientAuth)
	}
	for _, p := range s.PeerNames {
		if err := checkPattern(p); err != nil {
			bad("peer_names", "%v", err)
		}
	}
	if s.AcceptPlaintext && s.Requires() {
		bad("accept_plaintext", "only with client_auth = verify_if_given or none (a rollout step; require refuses plaintext)")
	}
	if !s.Enabled() {
		if s.AcceptPlaintext {
			bad("accept_plaintext", "needs cert_file, key_file and ca_file")
		}
		if s.AppTLS {
			bad("app_tls", "needs cert_file, key_file and ca_file")
		}
		if len(s.PeerNames) > 0 || (s.ClientAuth != "" && !s.AcceptPlaintext) {
			bad("cert_file", "required when other [tls] keys are set")
		}
		return errors.Join(errs...)
	}
	if (s.CertFile == "") != (s.KeyFile == "") {
		bad("key_file", "cert_file and key_file go together")
	}
	if s.CAFile == "" {
		bad("ca_file", "required with TLS on: peers' certificates are verified against it")
	}
	if server && !s.HasCert() {
		bad("cert_file", "required to serve TLS")
	}
	return errors.Join(errs...)
}

// maxStars bounds the wildcards of a peer_names pattern.
const maxStars = 4

// checkPattern refuses a peer_names entry that could match nothing or
// too much.
func checkPattern(p string) error {
	switch {
	case p == "" || strings.TrimSpace(p) != p:
		return fmt.Errorf("%q: empty or padded", p)
	case len(p) > 1024:
		return fmt.Errorf("%q...: longer than 1024 bytes", p[:32])
	case strings.Contains(p, "**"):
		return fmt.Errorf("%q: '**' means nothing more than '*'", p)
	case strings.Count(p, "*") > maxStars:
		return fmt.Errorf("%q: more than %d '*'", p, maxStars)
	case p == "*":
		return fmt.Errorf("%q: matches any one-label name; list the peers' names", p)
	}
	return nil
}
