package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"spangle/shared/bodytest"
	"spangle/shared/wire"
)

// A batch whose body dribbles in holds no in-flight slot: ordinary GETs
// are answered meanwhile, even with max_inflight 1.
func TestBatchSlowBodyHoldsNoSlot(t *testing.T) {
	f := newFixture(t, Options{MaxInflight: 1, BatchReadTimeout: time.Minute})
	p := bodytest.Wrap(f.handler)
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	addr := srv.Listener.Addr().String()
	reading := p.Asking(2)
	slow, err := bodytest.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
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

func batcher(f *fixture) bodytest.Batcher {
	return bodytest.Batcher{Handler: f.handler, DB: "baby-names", Key: "1881/boy", Metrics: "spangle_storaged"}
}

// A batch body that does not arrive within batch_read_timeout is
// answered 408, and the connection is let go.
func TestBatchBodyReadDeadline(t *testing.T) {
	bodytest.CheckReadDeadline(t, batcher(newFixture(t, Options{BatchReadTimeout: 200 * time.Millisecond})))
}

// The bytes of batch bodies held at once are bounded per node: past the
// bound a batch gets 503 with Retry-After, and the bytes come back when
// the stalled body's request ends.
func TestBatchBodyBudget(t *testing.T) {
	const budget = 96 << 10
	bodytest.CheckBudget(t, batcher(newFixture(t, Options{BatchReadBytes: budget, BatchReadTimeout: time.Minute,
		BatchLimits: wire.BatchLimits{MaxBytes: 64 << 10, MaxKeys: 10000}})), budget)
}

// A POST to a path with a bad db name is a bad request, as a GET of it.
func TestBatchBadPathAsGet(t *testing.T) {
	f := newFixture(t, Options{})
	b := batcher(f)
	b.DB = "bin"
	bodytest.CheckBadPathAsGet(t, b)
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
