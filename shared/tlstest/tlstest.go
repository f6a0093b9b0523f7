package tlstest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"spangle/shared/certgen"
	"spangle/shared/tlsconfig"
)

// PeerName is the DNS name in every peer certificate New makes, the one
// to list in peer_names.
const PeerName = "storaged.spangle.test"

// ClientName is the client certificate's name (no peer).
const ClientName = "client.spangle.test"

// Set is a test's certificates, written in a temporary directory.
type Set struct {
	Dir string
	CA  *certgen.CA
	// CAFile, CertFile and KeyFile are a peer's: server and client use,
	// for 127.0.0.1, localhost and PeerName.
	CAFile, CertFile, KeyFile string
	// ClientCert and ClientKey are a client's (ClientName), not a peer.
	ClientCert, ClientKey string
	n                     atomic.Int64
}

// New writes a CA, a peer and a client certificate into t.TempDir.
func New(t testing.TB) *Set {
	t.Helper()
	ca, err := certgen.NewCA("test CA", time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	s := &Set{Dir: t.TempDir(), CA: ca}
	s.CAFile = s.write(t, "ca.pem", ca.CertPEM)
	s.CertFile, s.KeyFile = s.Issue(t, certgen.Request{Names: []string{"127.0.0.1", "localhost", PeerName}})
	s.ClientCert, s.ClientKey = s.Issue(t, certgen.Request{Names: []string{ClientName}, Usage: certgen.Client})
	return s
}

// Issue signs another certificate with the set's CA and returns its
// files.
func (s *Set) Issue(t testing.TB, r certgen.Request) (certFile, keyFile string) {
	t.Helper()
	p, err := s.CA.Issue(r)
	if err != nil {
		t.Fatal(err)
	}
	return s.WritePair(t, p)
}

// WritePair writes p under fresh names in the set's directory.
func (s *Set) WritePair(t testing.TB, p *certgen.Pair) (certFile, keyFile string) {
	t.Helper()
	n := s.n.Add(1)
	return s.write(t, "cert-"+strconv.FormatInt(n, 10)+".pem", p.CertPEM), s.write(t, "key-"+strconv.FormatInt(n, 10)+".pem", p.KeyPEM)
}

// OtherCA issues a certificate for r from a CA of its own (written as
// caFile): what a rogue node would present.
func (s *Set) OtherCA(t testing.TB, r certgen.Request) (certFile, keyFile, caFile string) {
	t.Helper()
	ca, err := certgen.NewCA("rogue CA", time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := ca.Issue(r)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = s.WritePair(t, p)
	return certFile, keyFile, s.write(t, "rogue-ca-"+strconv.FormatInt(s.n.Add(1), 10)+".pem", ca.CertPEM)
}

// Peer is the [tls] section of a peer (storaged) with client_auth as
// given ("" for the default) and PeerName in peer_names.
func (s *Set) Peer(clientAuth string) tlsconfig.Settings {
	return tlsconfig.Settings{CertFile: s.CertFile, KeyFile: s.KeyFile, CAFile: s.CAFile,
		ClientAuth: clientAuth, PeerNames: []string{PeerName}}
}

// Client is the [tls] section of a client that is no peer (routerd).
func (s *Set) Client() tlsconfig.Settings {
	return tlsconfig.Settings{CertFile: s.ClientCert, KeyFile: s.ClientKey, CAFile: s.CAFile, PeerNames: []string{PeerName}}
}

// Write writes data as name in the set's directory and returns its path.
func (s *Set) Write(t testing.TB, name string, data []byte) string {
	t.Helper()
	return s.write(t, name, data)
}

func (s *Set) write(t testing.TB, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(s.Dir, name)
	mode := os.FileMode(0o644)
	if strings.HasPrefix(name, "key") {
		mode = 0o600
	}
	if err := certgen.WriteFile(p, data, mode); err != nil {
		t.Fatal(err)
	}
	return p
}
