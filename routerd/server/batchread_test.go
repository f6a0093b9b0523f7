package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"spangle/shared/bodytest"
	"spangle/shared/topo"
	"spangle/shared/wire"
)

// newBodyTestServer is a router over scripted replicas with the given
// bounds on batch bodies, on a real listener, its bodies watched.
func newBodyTestServer(t *testing.T, timeout time.Duration, budget, maxBytes int64) (*Server, *bodytest.Probe, string) {
	t.Helper()
	mir := topo.NewMirror()
	mir.Publish(twoNodeMap())
	f := &batchNodes{status: map[string]int{}, notHeld: map[string]bool{}, corrupt: map[string]bool{}}
	s, err := New(Options{Watcher: mir, Upstream: f,
		ProxyTimeout: testProxyTimeout, ProxyStageTimeout: testProxyTimeout / 2,
		BatchLimits:      wire.BatchLimits{MaxKeys: 10000, MaxBytes: maxBytes},
		BatchReadTimeout: timeout, BatchReadBytes: budget})
	if err != nil {
		t.Fatal(err)
	}
	p := bodytest.Wrap(s)
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return s, p, srv.Listener.Addr().String()
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

// A batch body that does not arrive within batch_read_timeout is
// answered 408 and its connection let go.
func TestBatchBodyReadDeadline(t *testing.T) {
	s, p, addr := newBodyTestServer(t, 200*time.Millisecond, 0, 0)
	reading := p.Asking(2)
	slow := dialT(t, addr)
	if err := slow.Post("/db", 100); err != nil {
		t.Fatal(err)
	}
	if err := slow.Send([]byte("ke")); err != nil {
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
	if m := do(s, "GET", "/metrics").Body.String(); !strings.Contains(m, `spangle_routerd_batch_bodies_refused_total{reason="timeout"} 1`) {
		t.Fatalf("timeout not counted:\n%s", m)
	}
}

// The bytes of batch bodies held at once are bounded per router: past
// the bound a batch gets 503 with Retry-After, and the bytes come back
// when the stalled body's request ends.
func TestBatchBodyBudget(t *testing.T) {
	const budget = 96 << 10
	s, p, addr := newBodyTestServer(t, time.Minute, budget, 64<<10)
	reading := p.Asking(40 << 10)
	stalled := dialT(t, addr)
	if err := stalled.Post("/db", -1); err != nil {
		t.Fatal(err)
	}
	if err := stalled.Chunk([]byte(strings.Repeat("key-1\n", (40<<10)/6+1))); err != nil {
		t.Fatal(err)
	}
	<-reading
	second := strings.Repeat("key-2\n", (40<<10)/6)
	rec, _ := postBatch(t, s, "/db", second)
	if rec.Code != wire.StatusUnavailable || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("batch past the router's budget: %d %q, want 503 with Retry-After", rec.Code, rec.Header().Get("Retry-After"))
	}
	if held := metricValue(t, s, "spangle_routerd_batch_body_bytes"); held < 40<<10 || held > budget {
		t.Fatalf("%v bytes held for a stalled 40 KiB body, want 40 KiB to %d", held, budget)
	}
	if m := do(s, "GET", "/metrics").Body.String(); !strings.Contains(m, `spangle_routerd_batch_bodies_refused_total{reason="memory"} 1`) {
		t.Fatal("refusal not counted")
	}
	if err := stalled.Send([]byte("0\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	if resp, err := stalled.Answer(30 * time.Second); err != nil || resp.StatusCode != 200 {
		t.Fatalf("stalled batch finished: %v %v", resp, err)
	}
	if held := metricValue(t, s, "spangle_routerd_batch_body_bytes"); held != 0 {
		t.Fatalf("%v bytes still held after every batch was answered", held)
	}
	if rec, _ := postBatch(t, s, "/db", second); rec.Code != 200 {
		t.Fatalf("batch within the budget: %d %s", rec.Code, rec.Body)
	}
}

// A POST to a path with a bad db name is a bad request, as a GET of it.
func TestBatchBadPathAsGet(t *testing.T) {
	s, _ := newBatchTestServer(t, 0)
	for _, tc := range []struct {
		path string
		code int
	}{
		{"/.hidden", 400}, {"/_x", 400}, {"/%2e%2e", 400}, {"/db/", 400},
		{"/", 405}, {"/db/key", 405},
	} {
		get := do(s, "GET", tc.path)
		rec, _ := postBatch(t, s, tc.path, "k\n")
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
