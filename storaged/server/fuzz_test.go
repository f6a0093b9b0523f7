package server

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"spangle/shared/wire"
)

// FuzzServeHTTP drives arbitrary paths, methods and pinned versions
// through the handler: it must never panic, must answer with a status of
// the contract, and must answer 200 only for what the contract allows.
func FuzzServeHTTP(f *testing.F) {
	for _, seed := range []string{
		"/baby-names/1881/boy", "/baby-names/1881%2Fboy", "/", "/healthz", "/bin", "/bin/",
		"/../etc/passwd", "/%2e%2e/x", "/bin/%00%ff", "/bin/a/../../b", "//x", "/bin/%41%42",
	} {
		f.Add("GET", seed, "")
	}
	f.Add("HEAD", "/bin/empty", "v1")
	f.Add("PUT", "/bin/x", "")
	f.Add("POST", "/.hidden", "")
	f.Add("POST", "/", "")
	f.Add("GET", "/bin/a/b/c", "v0")
	fx := newFixture(f, Options{})
	allowed := map[int]bool{200: true, 400: true, 404: true, 405: true, 410: true, 414: true}
	f.Fuzz(func(t *testing.T, method, path, pinned string) {
		u, err := url.ParseRequestURI(path)
		if err != nil || !validMethod(method) {
			return
		}
		req := httptest.NewRequest("GET", "/", nil)
		req.Method, req.URL, req.RequestURI = method, u, path
		if pinned != "" {
			req.Header[wire.HeaderVersion] = []string{pinned}
		}
		rec := httptest.NewRecorder()
		fx.handler.ServeHTTP(rec, req)
		if !allowed[rec.Code] {
			t.Fatalf("%s %q: status %d outside the contract", method, path, rec.Code)
		}
		if rec.Code == 200 && method != "GET" && method != "HEAD" {
			t.Fatalf("%s %q answered 200", method, path)
		}
		if rec.Code == 405 && rec.Header().Get("Allow") != "GET, HEAD" {
			t.Fatalf("405 without Allow")
		}
	})
}

func validMethod(m string) bool {
	if m == "" {
		return false
	}
	for _, c := range m {
		if c <= ' ' || c >= 0x7f {
			return false
		}
	}
	return m != http.MethodConnect
}
