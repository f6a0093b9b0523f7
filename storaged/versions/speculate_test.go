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

// aheadHooks are cluster hooks whose Guess answers guess at once and
// whose Held answers held once release closes; ready records what
// PartitionReady published.
func aheadHooks(guess, held []int, release <-chan struct{}, mu *sync.Mutex, ready *[]int) Hooks {
	return Hooks{
		Guess: func(ctx context.Context, db, version string, n int) ([]int, bool) { return guess, true },
		Held: func(ctx context.Context, db, version string, n int) ([]int, error) {
			select {
			case <-release:
				return held, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		},
		Gated: true,
		PartitionReady: func(db, version string, p, n int) {
			mu.Lock()
			*ready = append(*ready, p)
			mu.Unlock()
		},
	}
}

// TestBuildAheadKeptWhenDecisionMatches: while Held waits for the cluster,
// the guessed partitions are built (but not published, nor marked
// complete on disk); the decision naming the same ones makes the version
// servable from that build, without building it again.
func TestBuildAheadKeptWhenDecisionMatches(t *testing.T) {
	root := t.TempDir()
	writeV(t, root, "db", "v1")
	release := make(chan struct{})
	var (
		mu    sync.Mutex
		ready []int
	)
	h := start(t, root, t.TempDir(), func(o *Options) {
		o.Hooks = aheadHooks([]int{0, 2}, []int{0, 2}, release, &mu, &ready)
	})
	waitFor(t, "the guess built", func() bool { return h.metric("spangle_storaged_records_loaded_total") > 0 })
	ahead := h.metric("spangle_storaged_records_loaded_total")
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
	mu.Lock()
	if len(ready) != 0 {
		t.Fatalf("published %v before the decision", ready)
	}
	mu.Unlock()
	if st := h.state("db", "v1"); st != wire.StateBuilding {
		t.Fatalf("version is %s before the decision", st)
	}
	close(release)
	waitFor(t, "partitions published", func() bool { mu.Lock(); defer mu.Unlock(); return len(ready) == 2 })
	if read := h.metric("spangle_storaged_records_loaded_total"); read != ahead {
		t.Errorf("%v records read from the source, %v of them ahead; want all ahead (built once)", read, ahead)
	}
	for _, r := range testutil.Records(300, "v1") {
		val, _, err := h.get("db", "v1", string(r.Key))
		if p := partitioner.Partition(r.Key, 3); p != 1 && (err != nil || val != string(r.Value)) {
			t.Fatalf("%s (partition %d): %q, %v", r.Key, p, val, err)
		}
	}
}

// TestBuildAheadDiscardedWhenDecisionDiffers: a guess the decision does
// not confirm is thrown away, and the decided partitions are built; the
// guessed partition not held leaves nothing behind.
func TestBuildAheadDiscardedWhenDecisionDiffers(t *testing.T) {
	root := t.TempDir()
	writeV(t, root, "db", "v1")
	release := make(chan struct{})
	var (
		mu    sync.Mutex
		ready []int
	)
	h := start(t, root, t.TempDir(), func(o *Options) {
		o.Hooks = aheadHooks([]int{0, 1}, []int{1, 2}, release, &mu, &ready)
	})
	waitFor(t, "the guess built", func() bool { return h.metric("spangle_storaged_records_loaded_total") > 0 })
	ahead := h.metric("spangle_storaged_records_loaded_total")
	close(release)
	waitFor(t, "partitions published", func() bool { mu.Lock(); defer mu.Unlock(); return len(ready) == 2 })
	mu.Lock()
	slices.Sort(ready)
	if fmt.Sprint(ready) != "[1 2]" {
		t.Errorf("published %v, want [1 2]", ready)
	}
	mu.Unlock()
	if _, err := os.Stat(h.store.PartitionDir(dbver.Of("db", "v1").Partition(0))); !os.IsNotExist(err) {
		t.Errorf("partition 0, guessed but not held, is still there: %v", err)
	}
	if read := h.metric("spangle_storaged_records_loaded_total"); read <= ahead {
		t.Errorf("%v records read from the source, %v of them ahead; want the decided partitions read again", read, ahead)
	}
	for _, r := range testutil.Records(300, "v1") {
		val, _, err := h.get("db", "v1", string(r.Key))
		if p := partitioner.Partition(r.Key, 3); p != 0 && (err != nil || val != string(r.Value)) {
			t.Fatalf("%s (partition %d): %q, %v", r.Key, p, val, err)
		}
	}
}
