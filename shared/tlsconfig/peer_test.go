package tlsconfig_test

import (
	"bufio"
	"crypto/tls"
	"io"
	"log"
	"net"
	"net/http"
	"testing"
	"time"

	"spangle/shared/tlsconfig"
	"spangle/shared/tlstest"
)

// wrapped is what a server's own request loop hands net/http: a TLS
// connection, with the bytes the loop read, that is no *tls.Conn.
type wrapped struct {
	net.Conn
	br *bufio.Reader
}

func (w *wrapped) Read(p []byte) (int, error) { return w.br.Read(p) }

// wrappedTLS is wrapped telling its TLS state, as net/http asks of a
// connection that is no *tls.Conn (Request.TLS).
type wrappedTLS struct {
	wrapped
	tc *tls.Conn
}

func (w *wrappedTLS) ConnectionState() tls.ConnectionState { return w.tc.ConnectionState() }

// wrappingListener completes each TLS handshake and reads the first
// request's first byte, as a fast path does, then yields the connection
// wrapped, telling its TLS state or not.
type wrappingListener struct {
	net.Listener
	tell bool
}

func (l wrappingListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		tc := c.(*tls.Conn)
		tc.SetDeadline(time.Now().Add(5 * time.Second))
		br := bufio.NewReader(tc)
		if _, err := br.Peek(1); err != nil { // the handshake, and a first byte read
			tc.Close()
			continue
		}
		tc.SetDeadline(time.Time{})
		if !l.tell {
			return &wrapped{Conn: tc, br: br}, nil
		}
		return &wrappedTLS{wrapped: wrapped{Conn: tc, br: br}, tc: tc}, nil
	}
}

// serveWrapped runs h over TLS as src says on a listener that hands
// net/http wrapped connections, telling their TLS state or not.
func serveWrapped(t *testing.T, src *tlsconfig.Source, h http.Handler, tell bool) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	go srv.Serve(wrappingListener{Listener: src.Listen(l), tell: tell})
	t.Cleanup(func() { srv.Close() })
	return l.Addr().String()
}

// TestPeerOnlyWrappedTLS is the contract for a server loop of our own
// that reads from TLS connections and hands some to net/http (storaged's
// GET fast path over TLS): a wrapped connection that tells its
// ConnectionState is judged by its certificate as a *tls.Conn is. One
// that does not looks like plaintext to net/http and so to PeerOnly: a
// peer refused under require, and under accept_plaintext any TLS client
// let through as a plaintext peer would be.
func TestPeerOnlyWrappedTLS(t *testing.T) {
	set := tlstest.New(t)
	peer, other := newSource(t, set.Peer(""), nil), newSource(t, set.Client(), nil)
	status := func(src *tlsconfig.Source, addr string) int {
		t.Helper()
		resp, err := get(src, addr, "/_partition/x")
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode
	}
	require := newSource(t, set.Peer("require"), nil)
	addr := serveWrapped(t, require, require.PeerOnly(ok), true)
	if got := status(peer, addr); got != 200 {
		t.Fatalf("require, a peer: %d, want 200", got)
	}
	if got := status(other, addr); got != 403 {
		t.Fatalf("require, a client that is no peer: %d, want 403", got)
	}
	if got := status(peer, serveWrapped(t, require, require.PeerOnly(ok), false)); got != 403 {
		t.Fatalf("require, a peer on a connection not telling its state: %d, want 403 (no TLS seen)", got)
	}

	st := set.Peer("verify_if_given")
	st.AcceptPlaintext = true
	rollout := newSource(t, st, nil)
	addr = serveWrapped(t, rollout, rollout.PeerOnly(ok), true)
	if got := status(peer, addr); got != 200 {
		t.Fatalf("accept_plaintext, a peer: %d, want 200", got)
	}
	if got := status(other, addr); got != 403 {
		t.Fatalf("accept_plaintext, a client that is no peer: %d, want 403", got)
	}
	if got := status(other, serveWrapped(t, rollout, rollout.PeerOnly(ok), false)); got != 200 {
		t.Fatalf("accept_plaintext, a client that is no peer on a connection not telling its state: %d, want 200 (taken for plaintext)", got)
	}
}
