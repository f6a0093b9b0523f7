package zktest

import (
	"testing"

	"spangle/shared/proxytest"
)

// Proxy starts a proxy to s, closed at the test's cleanup. A client
// dialing its Addr can be cut off alone (Cut) while the server and other
// clients go on: that is how a test makes the server really expire one
// client's session.
func (s *Server) Proxy(t testing.TB) *proxytest.Proxy {
	t.Helper()
	return proxytest.Start(t, s.Addr())
}
