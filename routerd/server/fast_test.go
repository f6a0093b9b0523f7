package server

import (
	"context"
	"io"
	"strconv"
	"testing"
	"time"

	"spangle/shared/h1fast/h1fasttest"
	"spangle/shared/wire"
)

// serveFast runs s.Serve on a local listener until the test ends.
func serveFast(t *testing.T, s *Server) string {
	t.Helper()
	l, err := newLocalListener()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return l.Addr().String()
}

// The fast path (shared/h1fast, whose own tests cover the connection
// loop and the parser) answers every lookup as ServeHTTP does: status,
// body and the headers a client reads, on one kept-alive connection,
// including the requests it leaves to net/http (after which net/http
// answers the rest of the connection).
func TestFastPathAnswersAsServeHTTP(t *testing.T) {
	s, _, f := newTestServer(t, twoNodeMap(), 0)
	f.missing["nokey"] = true
	rc := h1fasttest.Dial(t, serveFast(t, s))
	cases := []struct {
		method, target string
		hdr            []string
	}{
		{"GET", "/db/k1", nil},
		{"GET", "/db/a%2Fb/c%20d", nil},
		{"HEAD", "/db/k1", nil},
		{"GET", "/db/k1", []string{wire.HeaderVersion, "v1"}},
		{"GET", "/db/k1", []string{"x-sequins-version", "v1"}},
		{"GET", "/db/k1", []string{wire.HeaderVersion, "v0"}},
		{"GET", "/db/nokey", nil},
		{"HEAD", "/db/nokey", nil},
		{"GET", "/nodb/k", nil},
		{"GET", "/half/k", nil},
		{"GET", "/db/k1", []string{"Content-Length", "0", "Connection", "keep-alive"}},
		// Handed to net/http from here on.
		{"GET", "/db/", nil},
		{"GET", "/db/k2", nil},
		{"GET", "/healthz", nil},
	}
	for _, tc := range cases {
		want := do(s, tc.method, tc.target, tc.hdr...)
		rc.Send(h1fasttest.Request(tc.method, tc.target, "routerd", tc.hdr, ""))
		got, body := rc.Read(tc.method)
		name := tc.method + " " + tc.target
		wantBody := want.Body.String()
		if tc.method == "HEAD" {
			wantBody = "" // the recorder keeps what a server drops
		}
		if got.StatusCode != want.Code || body != wantBody {
			t.Errorf("%s %v: %d %q, ServeHTTP %d %q", name, tc.hdr, got.StatusCode, body, want.Code, wantBody)
		}
		for _, h := range []string{wire.HeaderVersion, "Content-Type", "Content-Length", "Last-Modified", "X-Content-Type-Options"} {
			g, w := got.Header.Get(h), want.Header().Get(h)
			if h == "Content-Length" && w == "" {
				w = strconv.Itoa(len(wantBody)) // net/http sets it
			}
			if g != w {
				t.Errorf("%s %v: %s %q, ServeHTTP %q", name, tc.hdr, h, g, w)
			}
		}
		if got.Header.Get("Date") == "" {
			t.Errorf("%s: no Date", name)
		}
	}
}

// Shutting down lets a lookup under way on the fast path finish and be
// answered, then closes its connection.
func TestFastPathShutdownFinishesLookups(t *testing.T) {
	s, _, f := newTestServer(t, twoNodeMap(), 0)
	f.status["a:1"], f.status["b:1"] = -2, -2 // silent until the lookup times out
	l, err := newLocalListener()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, l) }()
	rc := h1fasttest.Dial(t, l.Addr().String())
	rc.Send("GET /db/k HTTP/1.1\r\nHost: x\r\n\r\n")
	time.Sleep(100 * time.Millisecond) // the lookup is under way
	cancel()
	if resp, _ := rc.Read("GET"); resp.StatusCode != wire.StatusTimeout {
		t.Fatalf("lookup under way at shutdown: %d, want %d", resp.StatusCode, wire.StatusTimeout)
	}
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if _, err := rc.Reader().ReadByte(); err != io.EOF {
		t.Fatalf("connection after shutdown: %v, want EOF", err)
	}
}
