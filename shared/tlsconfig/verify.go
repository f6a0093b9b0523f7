package tlsconfig

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"sync"

	"go.uber.org/zap"
)

// ErrPeerRefused marks a handshake refused because the other side's
// certificate failed verification: not from the CA, expired, not yet
// valid, or (a server's) not valid for the address dialled nor carrying
// a peer_names identity.
var ErrPeerRefused = errors.New("tlsconfig: peer certificate refused")

// verifyChain checks that the leaf of certs chains to the current CA
// pool for usage.
func (s *Source) verifyChain(certs []*x509.Certificate, usage x509.ExtKeyUsage) error {
	if len(certs) == 0 {
		return fmt.Errorf("%w: no certificate", ErrPeerRefused)
	}
	b := s.cur.Load()
	if b.pool == nil {
		return fmt.Errorf("%w: no ca_file to verify it with", ErrPeerRefused)
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	_, err := certs[0].Verify(x509.VerifyOptions{Roots: b.pool, Intermediates: inter, CurrentTime: s.now(),
		KeyUsages: []x509.ExtKeyUsage{usage}})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrPeerRefused, err)
	}
	return nil
}

// verifyClient is the server's VerifyConnection: a client certificate,
// when there is one, must chain to the current CA. Whether one is needed
// crypto/tls has decided (ClientAuth).
func (s *Source) verifyClient(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		s.metrics.handshake(peerClient, cs.DidResume)
		return nil
	}
	if err := s.verifyChain(cs.PeerCertificates, x509.ExtKeyUsageClientAuth); err != nil {
		s.metrics.refused.WithLabelValues("client").Inc()
		id := "client " + firstIdentity(cs.PeerCertificates[0])
		if s.refusals.first(id) {
			s.log.Warn("tls: refused a client certificate", zap.String("client", id), zap.Error(err))
		}
		return err
	}
	s.metrics.handshake(peerClient, cs.DidResume)
	return nil
}

// verifyServer returns the client's VerifyConnection for a server dialled
// as host (addr names it in the log): its certificate must chain to the
// current CA and be valid for host, or carry an identity in peer_names.
func (s *Source) verifyServer(host, addr string) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		err := s.verifyChain(cs.PeerCertificates, x509.ExtKeyUsageServerAuth)
		if err == nil {
			leaf := cs.PeerCertificates[0]
			if herr := leaf.VerifyHostname(host); herr != nil && !matchAny(s.settings.PeerNames, leaf) {
				err = fmt.Errorf("%w: %w, and it carries no identity of peer_names", ErrPeerRefused, herr)
			}
		}
		if err != nil {
			s.metrics.refused.WithLabelValues("server").Inc()
			if s.refusals.first("server " + addr) {
				s.log.Warn("tls: refused a server's certificate; the server is treated as unreachable", zap.String("server", addr), zap.Error(err))
			}
			return err
		}
		s.metrics.handshake(peerServer, cs.DidResume)
		return nil
	}
}

func firstIdentity(c *x509.Certificate) string {
	if ids := Identities(c); len(ids) > 0 {
		return ids[0]
	}
	return c.Subject.CommonName
}

// ClientConfig is a client config for dialling host (a name or an IP,
// without the port): the current certificate is presented, and the
// server's is verified by VerifyConnection against the current CA, for
// host or a peer_names identity. InsecureSkipVerify only hands the
// verification over to it: crypto/tls would check a fixed RootCAs and no
// peer_names. Sessions are resumed. nil for a nil Source (plaintext).
func (s *Source) ClientConfig(host string) *tls.Config { return s.clientConfig(host, host) }

func (s *Source) clientConfig(host, addr string) *tls.Config {
	if s == nil {
		return nil
	}
	c := &tls.Config{
		MinVersion:           tls.VersionTLS12,
		GetClientCertificate: s.getClientCertificate,
		InsecureSkipVerify:   true, // verified in full by VerifyConnection
		VerifyConnection:     s.verifyServer(host, addr),
		ClientSessionCache:   s.sessions,
	}
	if net.ParseIP(host) == nil {
		c.ServerName = host
	}
	return c
}

// onceSet remembers up to max keys, so that each refused peer is logged
// once (and the set cannot grow without bound). It is safe for
// concurrent use.
type onceSet struct {
	max  int
	mu   sync.Mutex
	seen map[string]struct{} // guarded by mu
}

func newOnceSet(max int) *onceSet { return &onceSet{max: max, seen: map[string]struct{}{}} }

// first reports whether key was not seen before (always true once the
// set is full, so that nothing goes unlogged for good).
func (o *onceSet) first(key string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.seen[key]; ok {
		return false
	}
	if len(o.seen) < o.max {
		o.seen[key] = struct{}{}
	}
	return true
}
