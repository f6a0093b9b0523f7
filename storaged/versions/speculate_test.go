package versions

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"

	"spangle/shared/dbver"
	"spangle/shared/partitioner"
	"spangle/shared/wire"
	"spangle/storaged/internal/testutil"
)

// aheadRun is a manager serving db/v1 (300 records, 3 partitions) whose
// cluster hooks guess guess at once and decide held once release is
// closed, recording what PartitionReady publishes.
type aheadRun struct {
	h       *harness
	release chan struct{}
	mu      sync.Mutex
	ready   []int   // guarded by mu
	built   float64 // records read from the source by the guess
}

// startAhead starts it and waits until the guess has read records.
func startAhead(t *testing.T, guess, held []int) *aheadRun {
	t.Helper()
	root := t.TempDir()
	writeV(t, root, "db", "v1")
	a := &aheadRun{release: make(chan struct{})}
	a.h = start(t, root, t.TempDir(), func(o *Options) {
		o.Hooks = Hooks{
			Guess: func(ctx context.Context, db, version string, n int) ([]int, bool) { return guess, true },
			Held: func(ctx context.Context, db, version string, n int) ([]int, error) {
				select {
				case <-a.release:
					return held, nil
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			},
			Gated: true,
			PartitionReady: func(db, version string, p, n int) {
				a.mu.Lock()
				a.ready = append(a.ready, p)
				a.mu.Unlock()
			},
		}
	})
	waitFor(t, "the guess built", func() bool { return a.h.metric("spangle_storaged_records_loaded_total") > 0 })
	a.built = a.h.metric("spangle_storaged_records_loaded_total")
	return a
}

// published returns the partitions published so far, sorted.
func (a *aheadRun) published() []int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Sorted(slices.Values(a.ready))
}

// decide releases the decision and waits until both held partitions are
// published.
func (a *aheadRun) decide(t *testing.T) {
	t.Helper()
	close(a.release)
	waitFor(t, "partitions published", func() bool { return len(a.published()) == 2 })
}

// checkServed fails t unless every record outside partition notHeld is
// served from v1.
func (a *aheadRun) checkServed(t *testing.T, notHeld int) {
	t.Helper()
	for _, r := range testutil.Records(300, "v1") {
		val, _, err := a.h.get("db", "v1", string(r.Key))
		if p := partitioner.Partition(r.Key, 3); p != notHeld && (err != nil || val != string(r.Value)) {
			t.Fatalf("%s (partition %d): %q, %v", r.Key, p, val, err)
		}
	}
}

// TestBuildAheadKeptWhenDecisionMatches: while Held waits for the cluster,
// the guessed partitions are built (but not published, nor marked
// complete on disk); the decision naming the same ones makes the version
// servable from that build, without building it again.
func TestBuildAheadKeptWhenDecisionMatches(t *testing.T) {
	a := startAhead(t, []int{0, 2}, []int{0, 2})
	h := a.h
	for _, p := range []int{0, 2} {
		if _, err := os.Stat(h.store.PartitionDir(dbver.Of("db", "v1").Partition(p))); err != nil {
			t.Fatalf("partition %d not built ahead: %v", p, err)
		}
	}
	if _, err := os.Stat(h.store.PartitionDir(dbver.Of("db", "v1").Partition(1))); !os.IsNotExist(err) {
		t.Fatalf("partition 1, not guessed, is there: %v", err)
	}
	if man, err := h.store.ReadManifest(dbver.Of("db", "v1")); err != nil || man.Complete {
		t.Fatalf("manifest before the decision: %+v, %v; want one not complete", man, err)
	}
	if got := a.published(); len(got) != 0 {
		t.Fatalf("published %v before the decision", got)
	}
	if st := h.state("db", "v1"); st != wire.StateBuilding {
		t.Fatalf("version is %s before the decision", st)
	}
	a.decide(t)
	if read := h.metric("spangle_storaged_records_loaded_total"); read != a.built {
		t.Errorf("%v records read from the source, %v of them ahead; want all ahead (built once)", read, a.built)
	}
	a.checkServed(t, 1)
}

// TestBuildAheadDiscardedWhenDecisionDiffers: a guess the decision does
// not confirm is thrown away, and the decided partitions are built; the
// guessed partition not held leaves nothing behind.
func TestBuildAheadDiscardedWhenDecisionDiffers(t *testing.T) {
	a := startAhead(t, []int{0, 1}, []int{1, 2})
	a.decide(t)
	if got := a.published(); fmt.Sprint(got) != "[1 2]" {
		t.Errorf("published %v, want [1 2]", got)
	}
	if _, err := os.Stat(a.h.store.PartitionDir(dbver.Of("db", "v1").Partition(0))); !os.IsNotExist(err) {
		t.Errorf("partition 0, guessed but not held, is still there: %v", err)
	}
	if read := a.h.metric("spangle_storaged_records_loaded_total"); read <= a.built {
		t.Errorf("%v records read from the source, %v of them ahead; want the decided partitions read again", read, a.built)
	}
	a.checkServed(t, 0)
}
