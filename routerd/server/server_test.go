package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"spangle/routerd/proxy"
	"spangle/shared/partitioner"
	"spangle/shared/topo"
	"spangle/shared/wire"
)

// fakeNodes scripts storaged replicas: each answers "<version>:<key>"
// unless told otherwise, and records every address contacted.
type fakeNodes struct {
	mu       sync.Mutex
	contacts []string
	keys     []string
	status   map[string]int // by addr; 0 means answer
	missing  map[string]bool
	noRecord bool // benchmarks: keep no contacts
}

func (f *fakeNodes) Get(ctx context.Context, addr string, req *proxy.Request) (*proxy.Response, error) {
	f.mu.Lock()
	if !f.noRecord {
		f.contacts = append(f.contacts, addr)
		f.keys = append(f.keys, string(req.Key))
	}
	code := f.status[addr]
	missing := f.missing[string(req.Key)]
	f.mu.Unlock()
	switch {
	case code == -1:
		return nil, errors.New("connection refused")
	case code == -2:
		<-ctx.Done()
		return nil, ctx.Err()
	case code == -3:
		// 410 from a node that knows the db: it names its own version.
		return &proxy.Response{Status: 410, Version: "v9"}, nil
	case code != 0:
		return &proxy.Response{Status: code, RetryAfter: "7"}, nil
	case missing:
		return &proxy.Response{Status: 404, Version: req.Version}, nil
	}
	return &proxy.Response{Status: 200, Version: req.Version, Body: []byte(req.Version + ":" + string(req.Key))}, nil
}

// calls is the number of upstream calls so far.
func (f *fakeNodes) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.contacts)
}

func (f *fakeNodes) set(addr string, code int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status[addr] = code
}

var created = time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)

// twoNodeMap: db "db" v1 and v2 complete over nodes a and b (2
// partitions, both replicas each); db "half" incomplete.
func twoNodeMap() *topo.Map {
	var b topo.Builder
	b.AddNode(topo.Node{Addr: "a:1", ShardID: "a:1"})
	b.AddNode(topo.Node{Addr: "b:1", ShardID: "b:1"})
	for _, v := range []string{"v1", "v2"} {
		b.AddVersion("db", v, topo.VersionInfo{NumPartitions: 2, Created: created})
		for p := 0; p < 2; p++ {
			b.AddReplica("db", v, p, "a:1")
			b.AddReplica("db", v, p, "b:1")
		}
	}
	b.AddVersion("half", "v1", topo.VersionInfo{NumPartitions: 2, Created: created})
	b.AddReplica("half", "v1", 0, "a:1")
	return b.Build(0)
}

// testProxyTimeout is generous: the tests run on loaded machines under
// -race, where an in-process answer can take tens of ms. The stage
// timeout is half of it, so no stall of the machine starts a hedge that
// the tests' counts of upstream calls would see.
const testProxyTimeout = 2 * time.Second

func newTestServer(t testing.TB, m *topo.Map, cacheBytes int64) (*Server, *topo.Mirror, *fakeNodes) {
	t.Helper()
	mir := topo.NewMirror()
	mir.Publish(m)
	f := &fakeNodes{status: map[string]int{}, missing: map[string]bool{}}
	s, err := New(Options{Watcher: mir, Upstream: f, CacheBytes: cacheBytes,
		ProxyTimeout: testProxyTimeout, ProxyStageTimeout: testProxyTimeout / 2})
	if err != nil {
		t.Fatal(err)
	}
	return s, mir, f
}

func do(s http.Handler, method, target string, hdr ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	return w
}

func TestLookupStatuses(t *testing.T) {
	s, _, f := newTestServer(t, twoNodeMap(), 0)
	f.missing["nokey"] = true
	cases := []struct {
		method, target string
		hdr            []string
		code           int
		version        string
		body           string
	}{
		{"GET", "/db/k1", nil, 200, "v2", "v2:k1"},
		{"GET", "/db/a%2Fb/c%20d", nil, 200, "v2", "v2:a/b/c d"},
		{"HEAD", "/db/k1", nil, 200, "v2", ""},
		{"GET", "/db/k1", []string{wire.HeaderVersion, "v1"}, 200, "v1", "v1:k1"},
		{"GET", "/db/k1", []string{wire.HeaderVersion, "v0"}, 410, "", ""},
		{"GET", "/db/k1", []string{wire.HeaderVersion, "../x"}, 410, "", ""},
		{"GET", "/db/nokey", nil, 404, "v2", ""},
		{"GET", "/nodb/k", nil, 404, "", ""},
		{"GET", "/half/k", nil, 404, "v1", ""}, // the db exists: the version it waits for
		{"GET", "/db/", nil, 400, "", "empty key\n"},
		{"GET", "/_x/k", nil, 400, "", "bad path\n"},
		{"GET", "/db/" + strings.Repeat("x", wire.MaxKeyLen+1), nil, 414, "", ""},
		{"POST", "/db/k1", nil, 405, "", ""},
		{"DELETE", "/", nil, 405, "", ""},
	}
	for _, tc := range cases {
		w := do(s, tc.method, tc.target, tc.hdr...)
		name := tc.method + " " + tc.target
		if w.Code != tc.code {
			t.Errorf("%s %v: code %d, want %d (%s)", name, tc.hdr, w.Code, tc.code, w.Body.String())
			continue
		}
		if got := w.Header().Get(wire.HeaderVersion); got != tc.version {
			t.Errorf("%s: version header %q, want %q", name, got, tc.version)
		}
		if tc.code == 405 && w.Header().Get("Allow") != "GET, HEAD" {
			t.Errorf("%s: Allow %q", name, w.Header().Get("Allow"))
		}
		if tc.code == 400 && w.Body.String() != tc.body {
			t.Errorf("%s: body %q, want the plain %q", name, w.Body.String(), tc.body)
		}
		if tc.code == 200 {
			if w.Body.String() != tc.body {
				t.Errorf("%s: body %q, want %q", name, w.Body.String(), tc.body)
			}
			h := w.Header()
			if h.Get("Last-Modified") != created.Format(http.TimeFormat) ||
				h.Get("Content-Type") != wire.DefaultContentType ||
				h.Get("Content-Length") != "5" && tc.method == "GET" && !strings.Contains(tc.target, "%") ||
				(h.Get(wire.HeaderProxiedTo) != "a:1" && h.Get(wire.HeaderProxiedTo) != "b:1") {
				t.Errorf("%s: headers %v", name, h)
			}
		}
	}
}

func TestLookupFailures(t *testing.T) {
	s, mir, f := newTestServer(t, twoNodeMap(), 0)
	f.set("a:1", 503)
	f.set("b:1", 503)
	w := do(s, "GET", "/db/k")
	if w.Code != 503 || w.Header().Get("Retry-After") != "7" || w.Header().Get(wire.HeaderVersion) != "v2" {
		t.Fatalf("all shedding: %d %v", w.Code, w.Header())
	}
	f.set("a:1", -1)
	f.set("b:1", -1)
	if w := do(s, "GET", "/db/k"); w.Code != 502 {
		t.Fatalf("all refused: %d", w.Code)
	}
	f.set("a:1", -2)
	f.set("b:1", -2)
	start := time.Now()
	if w := do(s, "GET", "/db/k"); w.Code != 504 {
		t.Fatalf("all hanging: %d", w.Code)
	}
	if el := time.Since(start); el < testProxyTimeout || el > testProxyTimeout+time.Second {
		t.Fatalf("504 after %v, proxy timeout %v", el, testProxyTimeout)
	}
	f.set("a:1", 410)
	f.set("b:1", 410)
	if w := do(s, "GET", "/db/k", wire.HeaderVersion, "v1"); w.Code != 410 {
		t.Fatalf("all gone: %d", w.Code)
	}
	// Unpinned, a request never gets 410: the db is gone everywhere
	// (410 without a version) is 404 without a version, as for any db
	// that does not exist...
	if w := do(s, "GET", "/db/k"); w.Code != 404 || w.Header().Get(wire.HeaderVersion) != "" {
		t.Fatalf("unpinned, db gone on every replica: %d %v", w.Code, w.Header())
	}
	// ...and the served version gone while the db is known is routerd's
	// failure to reach it, 502.
	f.set("a:1", -3)
	if w := do(s, "GET", "/db/k"); w.Code != 502 || w.Header().Get(wire.HeaderVersion) != "v2" {
		t.Fatalf("unpinned, served version gone: %d %v", w.Code, w.Header())
	}
	if w := do(s, "GET", "/db/k", wire.HeaderVersion, "v2"); w.Code != 410 {
		t.Fatalf("pinned, version gone: %d", w.Code)
	}
	// A partition with no replica: 502 for the served version.
	var b topo.Builder
	b.AddNode(topo.Node{Addr: "a:1"})
	b.AddVersion("db", "v2", topo.VersionInfo{NumPartitions: 2})
	b.AddReplica("db", "v2", 0, "a:1")
	b.AddReplica("db", "v2", 1, "a:1")
	mir.Publish(b.Build(0))
	s.table.Current()
	var b2 topo.Builder
	b2.AddNode(topo.Node{Addr: "a:1"})
	b2.AddVersion("db", "v2", topo.VersionInfo{NumPartitions: 2})
	b2.AddReplica("db", "v2", 0, "a:1")
	mir.Publish(b2.Build(0))
	f.set("a:1", 0)
	var key1 string
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		if partitioner.Partition([]byte(k), 2) == 1 {
			key1 = k
		}
	}
	if w := do(s, "GET", "/db/"+key1); w.Code != 502 {
		t.Fatalf("partition without replica: %d", w.Code)
	}
	if w := do(s, "GET", "/db/"+key1, wire.HeaderVersion, "v2"); w.Code != 410 {
		t.Fatalf("pinned, partition without replica: %d", w.Code)
	}
}

func TestOnlyRegisteredNodesContacted(t *testing.T) {
	var b topo.Builder
	b.AddNode(topo.Node{Addr: "a:1"})
	b.AddVersion("db", "v1", topo.VersionInfo{NumPartitions: 1})
	b.AddReplica("db", "v1", 0, "a:1")
	b.AddReplica("db", "v1", 0, "evil.example:80") // a replica entry without a node entry
	s, _, f := newTestServer(t, b.Build(0), 0)
	f.set("a:1", -1)
	for i := 0; i < 10; i++ {
		do(s, "GET", "/db/k")
	}
	for _, a := range f.contacts {
		if a != "a:1" {
			t.Fatalf("contacted unregistered %q", a)
		}
	}
}

func TestCacheServesServedVersionOnly(t *testing.T) {
	s, mir, f := newTestServer(t, twoNodeMap(), 1<<20)
	if w := do(s, "GET", "/db/k"); w.Body.String() != "v2:k" {
		t.Fatalf("body %q", w.Body.String())
	}
	do(s, "GET", "/db/k")
	if n := f.calls(); n != 1 {
		t.Fatalf("%d upstream calls for two lookups of one key", n)
	}
	// Negative answers are cached too.
	f.mu.Lock()
	f.missing["gone"] = true
	f.mu.Unlock()
	do(s, "GET", "/db/gone")
	if w := do(s, "GET", "/db/gone"); w.Code != 404 || f.calls() != 2 {
		t.Fatalf("negative caching: %d, %d calls", w.Code, f.calls())
	}
	// A new version: the cached v2 value is never served again.
	m := twoNodeMap()
	v3 := *m.DBs["db"]["v2"]
	m.DBs["db"]["v3"] = &v3
	mir.Publish(m)
	if w := do(s, "GET", "/db/k"); w.Body.String() != "v3:k" || w.Header().Get(wire.HeaderVersion) != "v3" {
		t.Fatalf("after switch: %q %v", w.Body.String(), w.Header())
	}
	body := do(s, "GET", "/metrics").Body.String()
	for _, want := range []string{"spangle_routerd_cache_hits_total 2", "spangle_routerd_cache_misses_total 3", `spangle_routerd_requests_total{code="200"} 3`} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

func TestStatusAndHealth(t *testing.T) {
	s, mir, _ := newTestServer(t, twoNodeMap(), 0)
	w := do(s, "GET", "/", "Accept", "application/json")
	var st Status
	if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil || w.Code != 200 {
		t.Fatalf("status json: %d %v", w.Code, err)
	}
	if st.DBs["db"].Served != "v2" || st.DBs["db"].Versions["v1"].State != "REMOVING" ||
		st.DBs["half"].Versions["v1"].State != "BUILDING" || len(st.Nodes) != 2 ||
		len(st.DBs["db"].Versions["v2"].Replicas) != 2 {
		t.Fatalf("status %+v", st)
	}
	w = do(s, "GET", "/")
	if !strings.Contains(w.Header().Get("Content-Type"), "text/html") || !strings.Contains(w.Body.String(), `<table id="nodes">`) {
		t.Fatalf("html status: %s", w.Body.String())
	}
	w = do(s, "GET", "/db", "Accept", "application/json")
	st = Status{}
	if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil || len(st.DBs) != 1 || w.Header().Get(wire.HeaderVersion) != "v2" {
		t.Fatalf("db status: %s", w.Body.String())
	}
	if w := do(s, "GET", "/nodb"); w.Code != 404 {
		t.Fatalf("unknown db status: %d", w.Code)
	}
	w = do(s, "GET", "/healthz")
	var h map[string]map[string]wire.Health
	if err := json.Unmarshal(w.Body.Bytes(), &h); err != nil || w.Code != 200 || h["db"]["v2"].State != "ACTIVE" {
		t.Fatalf("healthz: %d %s", w.Code, w.Body.String())
	}
	mir.Publish(topo.EmptyMap())
	if w := do(s, "GET", "/healthz"); w.Code != 404 {
		t.Fatalf("healthz with nothing served: %d", w.Code)
	}
	if w := do(s, "HEAD", "/metrics"); w.Code != 200 {
		t.Fatalf("metrics: %d", w.Code)
	}
}

func TestServeShutsDown(t *testing.T) {
	s, _, _ := newTestServer(t, twoNodeMap(), 0)
	l, err := newLocalListener()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Serve(ctx, l) }()
	resp, err := http.Get("http://" + l.Addr().String() + "/db/k")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "v2:k" {
		t.Fatalf("body %q", b)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(6 * time.Second):
		t.Fatal("Serve did not return after cancel")
	}
}
