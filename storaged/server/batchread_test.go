package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"spangle/shared/bodytest"
	"spangle/shared/wire"
)

// serveProbed serves h, its request bodies watched, on a real listener.
func serveProbed(t *testing.T, h http.Handler) (*bodytest.Probe, string) {
	t.Helper()
	p := bodytest.Wrap(h)
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return p, srv.Listener.Addr().String()
}

func dialT(t *testing.T, addr string) *bodytest.Client {
	t.Helper()
	c, err := bodytest.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// A batch whose body dribbles in holds no in-flight slot: ordinary GETs
// are answered meanwhile, even with max_inflight 1.
func TestBatchSlowBodyHoldsNoSlot(t *testing.T) {
	f := newFixture(t, Options{MaxInflight: 1, BatchReadTimeout: time.Minute})
	p, addr := serveProbed(t, f.handler)
	reading := p.Asking(2)
	slow := dialT(t, addr)
	if err := slow.Post("/baby-names", 100); err != nil {
		t.Fatal(err)
	}
	if err := slow.Send([]byte("18")); err != nil {
		t.Fatal(err)
	}
	<-reading
	resp, err := http.Get("http://" + addr + "/baby-names/1881/boy")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET while a batch body is slow: %d, want 200", resp.StatusCode)
	}
}

// A batch body that does not arrive within batch_read_timeout is
// answered 408, and the connection is let go.
func TestBatchBodyReadDeadline(t *testing.T) {
	f := newFixture(t, Options{BatchReadTimeout: 200 * time.Millisecond})
	p, addr := serveProbed(t, f.handler)
	reading := p.Asking(2)
	slow := dialT(t, addr)
	if err := slow.Post("/baby-names", 100); err != nil {
		t.Fatal(err)
	}
	if err := slow.Send([]byte("18")); err != nil {
		t.Fatal(err)
	}
	<-reading
	resp, err := slow.Answer(30 * time.Second)
	if err != nil {
		t.Fatalf("no answer to a stalled body: %v", err)
	}
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Fatalf("stalled body: %d, want 408", resp.StatusCode)
	}
	if m := do(f.handler, "GET", "/metrics").Body.String(); !strings.Contains(m, `spangle_storaged_batch_bodies_refused_total{reason="timeout"} 1`) {
		t.Fatalf("timeout not counted:\n%s", grepLines(m, "batch_bod"))
	}
}

// The bytes of batch bodies held at once are bounded per node: past the
// bound a batch gets 503 with Retry-After, and the bytes come back when
// the stalled body's request ends.
func TestBatchBodyBudget(t *testing.T) {
	const budget = 96 << 10
	f := newFixture(t, Options{BatchReadBytes: budget, BatchReadTimeout: time.Minute,
		BatchLimits: wire.BatchLimits{MaxBytes: 64 << 10, MaxKeys: 10000}})
	p, addr := serveProbed(t, f.handler)
	reading := p.Asking(40 << 10)
	stalled := dialT(t, addr)
	if err := stalled.Post("/baby-names", -1); err != nil {
		t.Fatal(err)
	}
	chunk := []byte(strings.Repeat("1881/boy\n", (40<<10)/9+1))
	if err := stalled.Chunk(chunk); err != nil {
		t.Fatal(err)
	}
	<-reading
	second := strings.Repeat("1881/boy\n", (40<<10)/9)
	rec := post(f.handler, "/baby-names", second)
	if rec.Code != wire.StatusUnavailable || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("batch past the node's budget: %d %q, want 503 with Retry-After", rec.Code, rec.Header().Get("Retry-After"))
	}
	if held := metricValue(t, f.handler, "spangle_storaged_batch_body_bytes"); held < 40<<10 || held > budget {
		t.Fatalf("%v bytes held for a stalled 40 KiB body, want 40 KiB to %d", held, budget)
	}
	if m := do(f.handler, "GET", "/metrics").Body.String(); !strings.Contains(m, `spangle_storaged_batch_bodies_refused_total{reason="memory"} 1`) {
		t.Fatalf("refusal not counted:\n%s", grepLines(m, "batch_bod"))
	}
	// The stalled client finishes; its bytes come back.
	if err := stalled.Send([]byte("0\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	if resp, err := stalled.Answer(30 * time.Second); err != nil || resp.StatusCode != 200 {
		t.Fatalf("stalled batch finished: %v %v", resp, err)
	}
	if held := metricValue(t, f.handler, "spangle_storaged_batch_body_bytes"); held != 0 {
		t.Fatalf("%v bytes still held after every batch was answered", held)
	}
	if rec := post(f.handler, "/baby-names", second); rec.Code != 200 {
		t.Fatalf("batch within the budget: %d %s", rec.Code, rec.Body)
	}
}

// A POST to a path with a bad db name is a bad request, as a GET of it.
func TestBatchBadPathAsGet(t *testing.T) {
	f := newFixture(t, Options{})
	for _, tc := range []struct {
		path string
		code int
	}{
		{"/.hidden", 400}, {"/_x", 400}, {"/%2e%2e", 400}, {"/bin/", 400},
		{"/", 405}, {"/bin/key", 405},
	} {
		get := do(f.handler, "GET", tc.path)
		rec := post(f.handler, tc.path, "k\n")
		if rec.Code != tc.code {
			t.Errorf("POST %s: %d, want %d", tc.path, rec.Code, tc.code)
		}
		if tc.code == 400 && get.Code != 400 {
			t.Errorf("GET %s: %d, want 400", tc.path, get.Code)
		}
		if rec.Code == 405 && rec.Header().Get("Allow") == "" {
			t.Errorf("POST %s: 405 without Allow", tc.path)
		}
	}
}

// A db directory without any version is left out of /healthz.
func TestHealthzOmitsDBWithoutVersions(t *testing.T) {
	f := newFixture(t, Options{})
	if err := os.Mkdir(filepath.Join(f.root, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	f.m.Refresh()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, ok := f.m.Views().Health()["empty"]; ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the scan never saw the empty db")
		}
		time.Sleep(5 * time.Millisecond)
	}
	rec := do(f.handler, "GET", "/healthz")
	var h map[string]map[string]wire.Health
	if err := json.Unmarshal(rec.Body.Bytes(), &h); err != nil {
		t.Fatal(err)
	}
	if _, ok := h["empty"]; ok || rec.Code != 200 || h["bin"]["v2"].State != wire.StateActive {
		t.Fatalf("healthz %d %s", rec.Code, rec.Body)
	}
}

func metricValue(t *testing.T, h http.Handler, name string) float64 {
	t.Helper()
	for _, l := range strings.Split(do(h, "GET", "/metrics").Body.String(), "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			var f float64
			if err := json.Unmarshal([]byte(v), &f); err != nil {
				t.Fatalf("%s: %v", l, err)
			}
			return f
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
