package s3test

import (
	"testing"

	"spangle/shared/proxytest"
)

// Proxy starts a proxy to s, closed at the test's cleanup: a test makes
// S3 unreachable (Cut) or drops downloads mid-object (CutAfter) while the
// server itself goes on. Clients reach it at ProxyEndpoint.
func (s *Server) Proxy(t testing.TB) *proxytest.Proxy {
	t.Helper()
	return proxytest.Start(t, s.Addr())
}

// ProxyEndpoint is p's URL, to give an S3 client in place of the
// server's Endpoint.
func ProxyEndpoint(p *proxytest.Proxy) string { return "http://" + p.Addr() }
