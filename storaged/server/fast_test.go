package server

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"spangle/shared/h1fast"
	"spangle/shared/h1fast/h1fasttest"
	"spangle/shared/wire"
)

// serveFast serves s as the daemon does, key lookups and batches on
// h1fast's loop and the rest on net/http, until the test ends; fast
// counts the lookups and batches the loop took.
func serveFast(t *testing.T, s *Server) (addr string, fast *atomic.Int64) {
	t.Helper()
	fast = new(atomic.Int64)
	fs, err := h1fast.New(h1fast.Options{
		Lookup: func(w http.ResponseWriter, r *http.Request, tg wire.Target) {
			fast.Add(1)
			s.ServeKey(w, r, tg)
		},
		Post: h1fast.PostOptions{MaxBytes: s.BatchMaxBytes(), Handle: func(w http.ResponseWriter, r *http.Request, tg wire.Target) {
			fast.Add(1)
			s.ServeBatch(w, r, tg)
		}},
		Fallback: s,
	})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- fs.Serve(l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := fs.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	return l.Addr().String(), fast
}

// roundTrip sends rc a request with hdr and, after the head, body as it
// is (hdr gives its Content-Length, if any), and reads the answer.
func roundTrip(t *testing.T, rc *h1fasttest.RawConn, method, target string, hdr []string, body string) (*http.Response, string) {
	t.Helper()
	rc.Send(h1fasttest.Request(method, target, "storaged", hdr, body))
	return rc.Read(method)
}

// Every key GET and HEAD the fast path takes is answered as net/http
// answers it through ServeHTTP: the same status, body, Content-Length
// and headers (Date aside): values, pinned versions, 404, 410, HEADs,
// and the 503 of a node over MaxInflight. Requests the fast path leaves
// to net/http still get net/http's answer on the same connection.
func TestFastPathAnswersAsServeHTTP(t *testing.T) {
	f := newFixture(t, Options{ContentType: "application/x-test"})
	addr, fast := serveFast(t, f.srv)
	fc := h1fasttest.Dial(t, addr)
	hc := h1fasttest.Dial(t, addr)
	if resp, _ := roundTrip(t, hc, "GET", "/bin", []string{"Accept", "application/json"}, ""); resp.StatusCode != 200 {
		t.Fatalf("status page: %d", resp.StatusCode)
	} // hc is net/http's from here on
	cases := []struct {
		method, target string
		hdr            []string
		fast           bool
	}{
		{"GET", "/baby-names/1881%2Fboy", nil, true},
		{"GET", "/baby-names/1881/boy", nil, true},
		{"HEAD", "/baby-names/1881/boy", nil, true},
		{"GET", "/baby-names/1066/boy", nil, true},
		{"HEAD", "/baby-names/1066/boy", nil, true},
		{"GET", "/nope/key", nil, true},
		{"GET", "/bin/a%2Fb%2Fc", []string{wire.HeaderVersion, "v2"}, true},
		{"GET", "/bin/a/b/c", []string{"x-sequins-version", "v1"}, true},
		{"GET", "/bin/a/b/c", []string{wire.HeaderVersion, "v0"}, true},
		{"HEAD", "/bin/a/b/c", []string{wire.HeaderVersion, "v0"}, true},
		{"GET", "/nope/a", []string{wire.HeaderVersion, "v1"}, true},
		{"GET", "/bin/100%25", nil, true},
		{"GET", "/bin/%00%FF%01", nil, true},
		{"GET", "/bin/%C3%BCn%C3%AF", nil, true},
		{"GET", "/bin/%3Fq=1%23f", nil, true},
		{"GET", "/bin/empty", []string{wire.HeaderVersion, "v1"}, true},
		{"HEAD", "/bin/empty", []string{wire.HeaderVersion, "v1"}, true},
		{"GET", "/baby-names/../../../etc/passwd", nil, true},
		{"GET", "/baby-names/", nil, false},
		{"GET", "/" + strings.Repeat("k", 10) + "/" + strings.Repeat("k", wire.MaxKeyLen+1), nil, false},
		{"GET", "/%2e%2e/%2e%2e/etc/passwd", nil, false},
		{"GET", "/_partition/bin/v2/0", nil, false},
		{"GET", "/healthz", nil, false},
		{"GET", "/bin", nil, false},
		{"DELETE", "/bin/a", nil, false},
	}
	check := func(tc struct {
		method, target string
		hdr            []string
		fast           bool
	}) {
		t.Helper()
		name := tc.method + " " + tc.target + " " + strings.Join(tc.hdr, ":")
		before := fast.Load()
		got, gotBody := roundTrip(t, fc, tc.method, tc.target, tc.hdr, "")
		if took := fast.Load() > before; took != tc.fast {
			t.Errorf("%s: on the fast path %v, want %v", name, took, tc.fast)
		}
		want, wantBody := roundTrip(t, hc, tc.method, tc.target, tc.hdr, "")
		h1fasttest.SameAnswer(t, name, got, gotBody, want, wantBody)
	}
	for _, tc := range cases {
		if tc.fast {
			check(tc)
		}
	}
	// Over MaxInflight: 503 with Retry-After on both paths.
	f.srv.inflight.Add(1 << 20)
	f.srv.opts.MaxInflight = 1
	check(cases[0])
	f.srv.inflight.Add(-(1 << 20))
	f.srv.opts.MaxInflight = 0
	for _, tc := range cases {
		if !tc.fast {
			check(tc)
		}
	}
}
