package server

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"spangle/shared/wire"
)

// FuzzServeHTTP feeds routerd arbitrary request lines and version pins.
// Whatever comes in, routerd answers with a status of the HTTP contract,
// contacts only registered nodes, and returns exactly the value of the
// key the path names.
func FuzzServeHTTP(f *testing.F) {
	for _, seed := range []struct{ method, target, pin string }{
		{"GET", "/db/k1", ""},
		{"HEAD", "/db/k1", "v1"},
		{"GET", "/db/a%2Fb/c", ""},
		{"GET", "/db/%00%ff", "v2"},
		{"GET", "/db/", ""},
		{"GET", "/db", ""},
		{"GET", "/", ""},
		{"GET", "/healthz", ""},
		{"GET", "/metrics", ""},
		{"POST", "/db/k", ""},
		{"POST", "/.hidden", ""},
		{"POST", "/", ""},
		{"GET", "/db/k?x=http://evil/", ""},
		{"GET", "http://evil.example/db/k", ""},
		{"GET", "//evil.example/db/k", ""},
		{"GET", "/db/..%2F..%2Fetc", "../v1"},
		{"GET", "/half/k", "v1"},
		{"GET", "/db/" + strings.Repeat("%41", 100), ""},
	} {
		f.Add(seed.method, seed.target, seed.pin)
	}
	s, _, nodes := newTestServer(f, twoNodeMap(), 1<<16)
	allowed := map[int]bool{200: true, 400: true, 404: true, 405: true, 410: true, 414: true, 502: true, 503: true, 504: true}
	f.Fuzz(func(t *testing.T, method, target, pin string) {
		raw := method + " " + target + " HTTP/1.1\r\nHost: routerd\r\n"
		if pin != "" {
			raw += wire.HeaderVersion + ": " + pin + "\r\n"
		}
		r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw + "\r\n")))
		if err != nil {
			return // net/http rejects it before any handler runs
		}
		nodes.mu.Lock()
		before := len(nodes.contacts)
		nodes.mu.Unlock()
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		if !allowed[w.Code] {
			t.Fatalf("%q %q pin %q: status %d", method, target, pin, w.Code)
		}
		if w.Code == 410 && r.Header.Get(wire.HeaderVersion) == "" {
			t.Fatalf("%q %q: 410 for a request that pinned nothing", method, target)
		}
		if w.Code == 400 && strings.Contains(w.Body.String(), "wire") {
			t.Fatalf("%q %q: 400 body echoes an internal error: %q", method, target, w.Body.String())
		}
		nodes.mu.Lock()
		contacts := append([]string(nil), nodes.contacts[before:]...)
		keys := append([]string(nil), nodes.keys[before:]...)
		nodes.mu.Unlock()
		for _, a := range contacts {
			if a != "a:1" && a != "b:1" {
				t.Fatalf("contacted unregistered %q", a)
			}
		}
		if w.Code == 200 && r.Method == "GET" && strings.Count(r.URL.EscapedPath(), "/") > 1 {
			tg, err := wire.ParsePath(r.URL.EscapedPath())
			if err != nil {
				t.Fatalf("200 for unparsable path %q", r.URL.EscapedPath())
			}
			if !tg.HasKey {
				return
			}
			want := w.Header().Get(wire.HeaderVersion) + ":" + string(tg.Key)
			if w.Body.String() != want {
				t.Fatalf("body %q, want %q", w.Body.String(), want)
			}
			for _, k := range keys {
				if k != string(tg.Key) {
					t.Fatalf("asked upstream for %q, path names %q", k, tg.Key)
				}
			}
		}
	})
}
