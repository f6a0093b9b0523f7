package server

import (
	"testing"
	"time"

	"spangle/shared/bodytest"
	"spangle/shared/topo"
	"spangle/shared/wire"
)

// newBodyBatcher is a router over scripted replicas with the given
// bounds on batch bodies, as bodytest's checks take it.
func newBodyBatcher(t *testing.T, timeout time.Duration, budget, maxBytes int64) bodytest.Batcher {
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
	return bodytest.Batcher{Handler: s, DB: "db", Key: "key-1", Metrics: "spangle_routerd"}
}

// A batch body that does not arrive within batch_read_timeout is
// answered 408 and its connection let go.
func TestBatchBodyReadDeadline(t *testing.T) {
	bodytest.CheckReadDeadline(t, newBodyBatcher(t, 200*time.Millisecond, 0, 0))
}

// The bytes of batch bodies held at once are bounded per router: past
// the bound a batch gets 503 with Retry-After, and the bytes come back
// when the stalled body's request ends.
func TestBatchBodyBudget(t *testing.T) {
	const budget = 96 << 10
	bodytest.CheckBudget(t, newBodyBatcher(t, time.Minute, budget, 64<<10), budget)
}

// A POST to a path with a bad db name is a bad request, as a GET of it.
func TestBatchBadPathAsGet(t *testing.T) {
	s, _ := newBatchTestServer(t, 0)
	bodytest.CheckBadPathAsGet(t, bodytest.Batcher{Handler: s, DB: "db", Key: "key-1", Metrics: "spangle_routerd"})
}
