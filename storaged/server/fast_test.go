package server

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"spangle/shared/h1fast"
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

// wireConn writes requests byte for byte and reads answers with
// net/http's parser.
type wireConn struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

func dialWire(t *testing.T, addr string) *wireConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(20 * time.Second))
	return &wireConn{t: t, c: c, br: bufio.NewReader(c)}
}

func (wc *wireConn) roundTrip(method, target string, hdr []string) (*http.Response, string) {
	wc.t.Helper()
	return wc.roundTripBody(method, target, hdr, "")
}

// roundTripBody sends a request with hdr and, after the head, body as
// it is (hdr gives its Content-Length, if any).
func (wc *wireConn) roundTripBody(method, target string, hdr []string, body string) (*http.Response, string) {
	wc.t.Helper()
	req := method + " " + target + " HTTP/1.1\r\nHost: storaged\r\n"
	for i := 0; i+1 < len(hdr); i += 2 {
		req += hdr[i] + ": " + hdr[i+1] + "\r\n"
	}
	if _, err := io.WriteString(wc.c, req+"\r\n"+body); err != nil {
		wc.t.Fatal(err)
	}
	resp, err := http.ReadResponse(wc.br, &http.Request{Method: method})
	if err != nil {
		wc.t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		wc.t.Fatal(err)
	}
	resp.Body.Close()
	return resp, string(b)
}

// Every key GET and HEAD the fast path takes is answered as net/http
// answers it through ServeHTTP: the same status, body, Content-Length
// and headers (Date aside): values, pinned versions, 404, 410, HEADs,
// and the 503 of a node over MaxInflight. Requests the fast path leaves
// to net/http still get net/http's answer on the same connection.
func TestFastPathAnswersAsServeHTTP(t *testing.T) {
	f := newFixture(t, Options{ContentType: "application/x-test"})
	addr, fast := serveFast(t, f.srv)
	fc := dialWire(t, addr)
	hc := dialWire(t, addr)
	if resp, _ := hc.roundTrip("GET", "/bin", []string{"Accept", "application/json"}); resp.StatusCode != 200 {
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
		got, gotBody := fc.roundTrip(tc.method, tc.target, tc.hdr)
		if took := fast.Load() > before; took != tc.fast {
			t.Errorf("%s: on the fast path %v, want %v", name, took, tc.fast)
		}
		want, wantBody := hc.roundTrip(tc.method, tc.target, tc.hdr)
		if got.StatusCode != want.StatusCode || gotBody != wantBody || got.ContentLength != want.ContentLength {
			t.Errorf("%s: fast %d len %d %.60q; net/http %d len %d %.60q", name,
				got.StatusCode, got.ContentLength, gotBody, want.StatusCode, want.ContentLength, wantBody)
		}
		if got.Header.Get("Date") == "" {
			t.Errorf("%s: no Date", name)
		}
		got.Header.Del("Date")
		want.Header.Del("Date")
		for k := range want.Header {
			if g, w := strings.Join(got.Header[k], ","), strings.Join(want.Header[k], ","); g != w {
				t.Errorf("%s: %s %q, net/http %q", name, k, g, w)
			}
		}
		for k := range got.Header {
			if _, ok := want.Header[k]; !ok {
				t.Errorf("%s: %s %q, which net/http does not send", name, k, got.Header[k])
			}
		}
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
