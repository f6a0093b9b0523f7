package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"spangle/shared/buildinfo"
	"spangle/shared/seqfile"
	"spangle/shared/source"
	"spangle/shared/topo"
	"spangle/shared/wire"
	"spangle/storaged/blockcache"
	"spangle/storaged/internal/testutil"
	"spangle/storaged/store"
	"spangle/storaged/table"
	"spangle/storaged/versions"
)

// binRecords are keys and values of awkward bytes.
var binRecords = []testutil.Record{
	{Key: []byte("a/b/c"), Value: []byte("slashes")},
	{Key: []byte("100%"), Value: []byte("percent")},
	{Key: []byte("\x00\xff\x01"), Value: []byte("\x00binary\xff")},
	{Key: []byte("sp ace"), Value: []byte("space")},
	{Key: []byte("empty"), Value: []byte{}},
	{Key: []byte("ünï"), Value: []byte("unicode")},
	{Key: []byte("?q=1#f"), Value: []byte("query")},
}

type fixture struct {
	root    string
	m       *versions.Manager
	srv     *Server
	handler http.Handler
}

// newFixture serves the healthy test data and a db "bin" whose v1 was
// replaced by v2 (v1 kept for pinned requests).
func newFixture(t testing.TB, opts Options) *fixture {
	t.Helper()
	td := testutil.TestData(t)
	root := t.TempDir()
	copyTree(t, filepath.Join(td, "healthy", "baby-names"), filepath.Join(root, "baby-names"))
	testutil.WriteVersion(t, root, "bin", "v1", 3, testutil.RoundRobin, seqfile.WriterOptions{}, binRecords)
	m := runManager(t, root, t.TempDir(), nil)
	waitActive(t, m, "bin", "v1")
	recs := append([]testutil.Record{}, binRecords...)
	for i := range recs {
		recs[i].Value = append([]byte("v2:"), recs[i].Value...)
	}
	testutil.WriteVersion(t, root, "bin", "v2", 2, testutil.Sharded, seqfile.WriterOptions{Compression: seqfile.Block, Codec: seqfile.GzipCodec}, recs)
	m.Refresh()
	waitActive(t, m, "bin", "v2")
	waitActive(t, m, "baby-names", "1")
	opts.Versions, opts.Views = m, m.Views()
	opts.Log = zaptest.NewLogger(t)
	srv, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{root: root, m: m, srv: srv, handler: srv}
}

// runManager runs a version manager over the source root, its local
// store in storeDir, until the test ends; held, if not nil, says which
// partitions this node holds.
func runManager(t testing.TB, root, storeDir string, held []int) *versions.Manager {
	t.Helper()
	return runManagerCache(t, root, storeDir, held, table.CacheOptions{Blocks: blockcache.New(1 << 20)})
}

// runManagerCache is runManager with the partitions read through cache
// (no block cache: mapped, as storaged's default).
func runManagerCache(t testing.TB, root, storeDir string, held []int, cache table.CacheOptions) *versions.Manager {
	t.Helper()
	src, st := testutil.OpenStore(t, root, storeDir)
	vopts := versions.Options{Source: src, Store: st, Log: zaptest.NewLogger(t), Retention: time.Hour,
		Cache: cache}
	vopts.Loader.Build.NoSync = true
	if held != nil {
		vopts.Hooks.Held = func(context.Context, string, string, int) ([]int, error) { return held, nil }
	}
	m, err := versions.New(vopts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return m
}

func waitActive(t testing.TB, m *versions.Manager, db, v string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for m.Views().Health()[db][v].State != wire.StateActive {
		if time.Now().After(deadline) {
			t.Fatalf("%s/%s not active: %+v", db, v, m.Views().Health())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func copyTree(t testing.TB, from, to string) {
	t.Helper()
	filepath.Walk(from, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(from, p)
		if fi.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o644)
	})
}

func do(h http.Handler, method, target string, hdr ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestHTTPContract(t *testing.T) {
	f := newFixture(t, Options{ContentType: "application/x-test"})
	long := "/bin/" + strings.Repeat("k", wire.MaxKeyLen+1)
	cases := []struct {
		name, method, path string
		hdr                []string
		code               int
		body               string // "" means not checked
		version            string // X-Sequins-Version; "-" means absent
	}{
		{"escaped slash", "GET", "/baby-names/1881%2Fboy", nil, 200, "John", "1"},
		{"literal slash", "GET", "/baby-names/1881/boy", nil, 200, "John", "1"},
		{"head", "HEAD", "/baby-names/1881/boy", nil, 200, "", "1"},
		{"missing key", "GET", "/baby-names/1066/boy", nil, 404, "", "1"},
		{"missing db", "GET", "/nope/key", nil, 404, "", "-"},
		{"empty key", "GET", "/baby-names/", nil, 400, "", "-"},
		{"key too long", "GET", long, nil, 414, "", "-"},
		{"post", "POST", "/baby-names/1881/boy", nil, 405, "", "-"},
		{"delete status", "DELETE", "/", nil, 405, "", "-"},
		{"pinned current", "GET", "/bin/a%2Fb%2Fc", []string{wire.HeaderVersion, "v2"}, 200, "v2:slashes", "v2"},
		{"pinned older", "GET", "/bin/a/b/c", []string{wire.HeaderVersion, "v1"}, 200, "slashes", "v1"},
		{"pinned unknown version", "GET", "/bin/a/b/c", []string{wire.HeaderVersion, "v0"}, 410, "", "v2"},
		{"pinned unknown db", "GET", "/nope/a", []string{wire.HeaderVersion, "v1"}, 410, "", "-"},
		{"percent key", "GET", "/bin/100%25", nil, 200, "v2:percent", "v2"},
		{"binary key", "GET", "/bin/%00%FF%01", nil, 200, "v2:\x00binary\xff", "v2"},
		{"space key", "GET", "/bin/sp%20ace", nil, 200, "v2:space", "v2"},
		{"unicode key", "GET", "/bin/%C3%BCn%C3%AF", nil, 200, "v2:unicode", "v2"},
		{"query chars key", "GET", "/bin/%3Fq=1%23f", nil, 200, "v2:query", "v2"},
		{"empty value v1", "GET", "/bin/empty", []string{wire.HeaderVersion, "v1"}, 200, "", "v1"},
		{"traversal db", "GET", "/../etc/passwd", nil, 400, "", "-"},
		{"escaped traversal", "GET", "/%2e%2e/%2e%2e/etc/passwd", nil, 400, "", "-"},
		{"traversal key", "GET", "/baby-names/../../../etc/passwd", nil, 404, "", "1"},
		{"db status", "GET", "/bin", []string{"Accept", "application/json"}, 200, "", "v2"},
		{"unknown db status", "GET", "/nope", nil, 404, "", "-"},
		{"healthz", "GET", "/healthz", nil, 200, "", "-"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := do(f.handler, c.method, c.path, c.hdr...)
			if rec.Code != c.code {
				t.Fatalf("%s %s: code %d, want %d (body %q)", c.method, c.path, rec.Code, c.code, rec.Body.String())
			}
			got := rec.Header().Get(wire.HeaderVersion)
			if (c.version == "-" && got != "") || (c.version != "-" && got != c.version) {
				t.Errorf("X-Sequins-Version %q, want %q", got, c.version)
			}
			if c.code == 200 && strings.HasPrefix(c.path, "/bin/") || strings.HasPrefix(c.path, "/baby-names/") && c.code == 200 {
				if c.body != "" || c.method == "GET" {
					if rec.Body.String() != c.body {
						t.Errorf("body %q, want %q", rec.Body.String(), c.body)
					}
				}
				if ct := rec.Header().Get("Content-Type"); ct != "application/x-test" {
					t.Errorf("Content-Type %q", ct)
				}
				if rec.Header().Get("Last-Modified") == "" {
					t.Error("no Last-Modified")
				}
				if cl := rec.Header().Get("Content-Length"); c.method == "HEAD" && cl != "4" {
					t.Errorf("HEAD Content-Length %q", cl)
				}
				if c.method == "HEAD" && rec.Body.Len() != 0 {
					t.Error("HEAD with a body")
				}
			}
			if c.code == 405 && rec.Header().Get("Allow") != "GET, HEAD" {
				t.Errorf("Allow %q", rec.Header().Get("Allow"))
			}
		})
	}
}

func TestHealthyTestdataKeyByKey(t *testing.T) {
	td := testutil.TestData(t)
	f := newFixture(t, Options{})
	srv := httptest.NewServer(f.handler)
	defer srv.Close()
	n := 0
	for i := 0; i < 5; i++ {
		file, err := os.Open(filepath.Join(td, "healthy", "baby-names", "1", "part-0000"+string(rune('0'+i))))
		if err != nil {
			t.Fatal(err)
		}
		r, err := seqfile.NewReader(file, file.Name())
		if err != nil {
			t.Fatal(err)
		}
		for r.Next() {
			n++
			resp, err := http.Get(srv.URL + wire.KeyPath("baby-names", r.Key()))
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || string(body) != string(r.Value()) {
				t.Fatalf("%q: %d %q, want %q", r.Key(), resp.StatusCode, body, r.Value())
			}
		}
		file.Close()
	}
	if n != 64 {
		t.Fatalf("checked %d records, want 64", n)
	}
}

func TestStatusPagesAndHealth(t *testing.T) {
	f := newFixture(t, Options{})
	rec := do(f.handler, "GET", "/", "Accept", "application/json")
	var st wire.NodeStatus
	if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil || rec.Code != 200 {
		t.Fatalf("status JSON: %d %v", rec.Code, err)
	}
	if st.Mode != "standalone" || st.DBs["bin"].Current != "v2" || st.DBs["bin"].Versions["v1"].State != wire.StateRemoving ||
		len(st.DBs["baby-names"].Versions["1"].Partitions) != 5 {
		t.Fatalf("status %+v", st)
	}
	rec = do(f.handler, "GET", "/", "Accept", "text/html")
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), "<h2>baby-names</h2>") || !strings.Contains(rec.Header().Get("Content-Type"), "text/html") {
		t.Fatalf("status HTML: %d %s", rec.Code, rec.Body.String())
	}
	rec = do(f.handler, "GET", "/bin", "Accept", "application/json")
	st = wire.NodeStatus{}
	json.Unmarshal(rec.Body.Bytes(), &st)
	if len(st.DBs) != 1 || st.DBs["bin"].Current != "v2" {
		t.Fatalf("db status %+v", st)
	}
	rec = do(f.handler, "GET", "/healthz")
	var h map[string]map[string]wire.Health
	if err := json.Unmarshal(rec.Body.Bytes(), &h); err != nil || rec.Code != 200 || h["baby-names"]["1"].State != wire.StateActive {
		t.Fatalf("healthz %d %s", rec.Code, rec.Body.String())
	}
	// Metrics: a per-server registry with request counts.
	do(f.handler, "GET", "/nope/x")
	rec = do(f.handler, "GET", "/metrics")
	for _, want := range []string{`spangle_storaged_requests_total{code="404"}`, "spangle_storaged_request_duration_seconds_bucket", `spangle_storaged_inflight_requests`} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func TestHealthzWithoutActiveVersion(t *testing.T) {
	td := testutil.TestData(t)
	src, _ := source.Open(filepath.Join(td, "unhealthy"), source.Options{})
	st, _ := store.Open(t.TempDir())
	m, _ := versions.New(versions.Options{Source: src, Store: st})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go m.Run(ctx)
	srv, _ := New(Options{Versions: m, Views: m.Views()})
	deadline := time.Now().Add(10 * time.Second)
	for m.Views().Health()["baby-names-bad"]["1"].State != wire.StateError {
		if time.Now().After(deadline) {
			t.Fatal("no ERROR state")
		}
		time.Sleep(5 * time.Millisecond)
	}
	rec := do(srv, "GET", "/healthz")
	var h map[string]map[string]wire.Health
	json.Unmarshal(rec.Body.Bytes(), &h)
	if rec.Code != 404 || h["baby-names-bad"]["1"].State != wire.StateError || !strings.Contains(h["baby-names-bad"]["1"].Reason, "part-00000") {
		t.Fatalf("healthz %d %s", rec.Code, rec.Body.String())
	}
}

func TestLoadSheddingAndDelay(t *testing.T) {
	f := newFixture(t, Options{MaxInflight: 1, Delay: 200 * time.Millisecond})
	srv := httptest.NewServer(f.handler)
	defer srv.Close()
	first := make(chan int)
	go func() {
		resp, err := http.Get(srv.URL + "/baby-names/1881/boy")
		if err != nil {
			first <- 0
			return
		}
		resp.Body.Close()
		first <- resp.StatusCode
	}()
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	resp, err := http.Get(srv.URL + "/baby-names/1881/boy")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "1" || time.Since(start) > 100*time.Millisecond {
		t.Fatalf("shed: %d Retry-After %q after %v", resp.StatusCode, resp.Header.Get("Retry-After"), time.Since(start))
	}
	if code := <-first; code != 200 {
		t.Fatalf("delayed request: %d", code)
	}
}

func TestHugeKeyOverSocket(t *testing.T) {
	f := newFixture(t, Options{})
	srv := httptest.NewServer(f.handler)
	defer srv.Close()
	for _, n := range []int{wire.MaxKeyLen + 1, 200 << 10, 4 << 20} {
		resp, err := http.Get(srv.URL + "/bin/" + strings.Repeat("%41", n))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 414 && resp.StatusCode != 431 && resp.StatusCode != 400 {
			t.Fatalf("key of %d bytes: %d", n, resp.StatusCode)
		}
	}
	resp, err := http.Get(srv.URL + "/baby-names/1881/boy")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("server hurt by huge keys: %v", err)
	}
	resp.Body.Close()
}

func TestStatusShowsClusterMap(t *testing.T) {
	var b topo.Builder
	b.AddNode(topo.Node{ID: "id1", ShardID: "s1", Addr: "10.0.0.1:9599"})
	b.AddVersion("bin", "v2", topo.VersionInfo{NumPartitions: 2})
	b.AddReplica("bin", "v2", 0, "10.0.0.1:9599")
	b.AddReplica("bin", "v2", 1, "10.0.0.2:9599")
	cm := b.Build(7)
	f := newFixture(t, Options{Mode: "cluster", Cluster: func() *topo.Map { return cm }})
	rec := do(f.handler, "GET", "/", "Accept", "application/json")
	var st wire.NodeStatus
	if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil || rec.Code != 200 {
		t.Fatalf("status JSON: %d %v", rec.Code, err)
	}
	if st.Mode != "cluster" || st.Cluster == nil || st.Cluster.Revision != 7 ||
		!reflect.DeepEqual(st.Cluster.Replicas("bin", "v2", 1), []string{"10.0.0.2:9599"}) ||
		st.Cluster.Nodes["10.0.0.1:9599"].ShardID != "s1" || st.DBs["bin"].Current != "v2" {
		t.Fatalf("status %s", rec.Body.String())
	}
	rec = do(f.handler, "GET", "/", "Accept", "text/html")
	if !strings.Contains(rec.Body.String(), "10.0.0.2:9599") {
		t.Fatalf("status HTML lacks the cluster map: %s", rec.Body.String())
	}
}

func TestStatusShowsTheBuildAndFaviconIsNotABadRequest(t *testing.T) {
	build := buildinfo.Info{Version: "v9.8.7", Commit: "c0ffee", GoVersion: "go1.99"}
	f := newFixture(t, Options{Build: build, Source: func() wire.SourceStatus { return wire.SourceStatus{Root: "/data"} }})
	rec := do(f.handler, "GET", "/", "Accept", "application/json")
	var st wire.NodeStatus
	if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil || st.Build != build {
		t.Fatalf("status JSON build %+v, %v", st.Build, err)
	}
	if strings.Contains(rec.Body.String(), `"since"`) {
		t.Errorf("a source that never failed shows since: %s", rec.Body.String())
	}
	rec = do(f.handler, "GET", "/", "Accept", "text/html")
	if !strings.Contains(rec.Body.String(), "v9.8.7") || !strings.Contains(rec.Body.String(), "c0ffee") {
		t.Errorf("status page lacks the build:\n%s", rec.Body.String())
	}
	if rec := do(f.handler, "GET", "/favicon.ico"); rec.Code != http.StatusNotFound {
		t.Errorf("/favicon.ico: %d, want 404", rec.Code)
	}
	rec = do(f.handler, "GET", "/metrics")
	if strings.Contains(rec.Body.String(), `spangle_storaged_requests_total{code="400"}`) &&
		!strings.Contains(rec.Body.String(), `spangle_storaged_requests_total{code="400"} 0`) {
		t.Errorf("/favicon.ico counted as a bad request:\n%s", rec.Body.String())
	}
}
