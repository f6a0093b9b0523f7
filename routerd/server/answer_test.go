package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"spangle/routerd/proxy"
	"spangle/shared/topo"
	"spangle/shared/wire"
)

// typedNodes are fakeNodes whose answers carry a Content-Type and a
// Last-Modified of their own.
type typedNodes struct{ *fakeNodes }

const replicaLastModified = "Mon, 01 Jan 2024 00:00:00 GMT"

func (t typedNodes) Get(ctx context.Context, addr string, req *proxy.Request) (*proxy.Response, error) {
	resp, err := t.fakeNodes.Get(ctx, addr, req)
	if resp != nil {
		resp.ContentType = "text/x-" + req.Version
		resp.LastModified = replicaLastModified
	}
	return resp, err
}

// TestCacheHitHeaders checks that an answer from the cache carries the
// headers the first, proxied, answer had, and that they follow the map.
func TestCacheHitHeaders(t *testing.T) {
	for _, typed := range []bool{false, true} {
		mir := topo.NewMirror()
		mir.Publish(twoNodeMap())
		f := &fakeNodes{status: map[string]int{}, missing: map[string]bool{}}
		var up proxy.Upstream = f
		wantCT := wire.DefaultContentType
		if typed {
			up = typedNodes{f}
			wantCT = "text/x-v2"
		}
		s, err := New(Options{Watcher: mir, Upstream: up, CacheBytes: 1 << 20,
			ProxyTimeout: testProxyTimeout, ProxyStageTimeout: testProxyTimeout / 2})
		if err != nil {
			t.Fatal(err)
		}
		check := func(what string, w *httptest.ResponseRecorder, lastModified, ct string, n int) {
			t.Helper()
			h := w.Header()
			if w.Code != 200 || h.Get(wire.HeaderVersion) != "v2" || h.Get("Last-Modified") != lastModified ||
				h.Get("Content-Type") != ct || h.Get("Content-Length") != "4" ||
				(h.Get(wire.HeaderProxiedTo) != "a:1" && h.Get(wire.HeaderProxiedTo) != "b:1") || f.calls() != n {
				t.Errorf("typed=%v %s: %d %v, %d upstream calls, want %d", typed, what, w.Code, h, f.calls(), n)
			}
		}
		first := do(s, "GET", "/db/k")
		check("miss", first, created.Format(http.TimeFormat), wantCT, 1)
		for i := 0; i < 2; i++ {
			w := do(s, "GET", "/db/k")
			check("hit", w, created.Format(http.TimeFormat), wantCT, 1)
			if w.Body.String() != "v2:k" || w.Header().Get(wire.HeaderProxiedTo) != first.Header().Get(wire.HeaderProxiedTo) {
				t.Errorf("hit: body %q from %q", w.Body.String(), w.Header().Get(wire.HeaderProxiedTo))
			}
		}
		if w := do(s, "HEAD", "/db/k"); w.Body.Len() != 0 {
			t.Errorf("HEAD hit has a body %q", w.Body.String())
		} else {
			check("HEAD hit", w, created.Format(http.TimeFormat), wantCT, 1)
		}
		// The same version, republished with another creation time: a hit
		// tells the new one.
		m := twoNodeMap()
		later := created.Add(time.Hour)
		m.DBs["db"]["v2"].Created = later
		mir.Publish(m)
		check("hit after the version's time changed", do(s, "GET", "/db/k"), later.Format(http.TimeFormat), wantCT, 1)
		// Without a creation time the replica's Last-Modified is sent,
		// and none when it sent none.
		m = twoNodeMap()
		m.DBs["db"]["v2"].Created = time.Time{}
		mir.Publish(m)
		lm := ""
		if typed {
			lm = replicaLastModified
		}
		check("hit without a creation time", do(s, "GET", "/db/k"), lm, wantCT, 1)
		// A cached key whose partition lost its replicas is still served
		// from the cache: the version's value cannot have changed. A key
		// not cached gets 502.
		m = twoNodeMap()
		v2 := m.DBs["db"]["v2"]
		for p := range v2.Replicas {
			v2.Replicas[p] = nil
		}
		mir.Publish(m)
		if w := do(s, "GET", "/db/k"); w.Code != http.StatusOK || w.Body.String() != "v2:k" || w.Header().Get(wire.HeaderVersion) != "v2" {
			t.Errorf("typed=%v: cached key without replicas: %d %q %v", typed, w.Code, w.Body.String(), w.Header())
		}
		if w := do(s, "GET", "/db/not-cached"); w.Code != http.StatusBadGateway || w.Header().Get(wire.HeaderVersion) != "v2" {
			t.Errorf("typed=%v: key not cached, without replicas: %d %v", typed, w.Code, w.Header())
		}
		// Once the version leaves the map, its cached keys are not served.
		m = twoNodeMap()
		delete(m.DBs["db"], "v2")
		mir.Publish(m)
		if w := do(s, "GET", "/db/k"); w.Code != http.StatusBadGateway || w.Header().Get(wire.HeaderVersion) != "v2" {
			t.Errorf("typed=%v: cached key of a version gone from the map: %d %v", typed, w.Code, w.Header())
		}
	}
}

// A pinned version arrives in whatever case the client wrote: over a real
// connection net/http canonicalizes the name, which lookup relies on.
func TestPinnedVersionHeaderCase(t *testing.T) {
	s, _, _ := newTestServer(t, twoNodeMap(), 1<<20)
	hs := httptest.NewServer(s)
	defer hs.Close()
	for _, name := range []string{"x-sequins-version", "X-SEQUINS-VERSION", wire.HeaderVersion} {
		req, err := http.NewRequest("GET", hs.URL+"/db/k", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header[name] = []string{"v1"} // sent as written
		resp, err := hs.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get(wire.HeaderVersion) != "v1" {
			t.Errorf("header %q: %d, version %q", name, resp.StatusCode, resp.Header.Get(wire.HeaderVersion))
		}
	}
}
