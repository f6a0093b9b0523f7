package versions

import (
	"context"
	"errors"
	"os"
	"slices"
	"sync"
	"testing"

	"spangle/shared/dbver"
	"spangle/shared/partitioner"
	"spangle/storaged/internal/testutil"
	"spangle/storaged/replica"
)

// A version holding one partition gains one from the source and one
// copied from another node's directory, answers for all three, records
// them in its manifest, and drops one again.
func TestAddAndDropPartition(t *testing.T) {
	root := t.TempDir()
	writeV(t, root, "db", "v1")
	var mu sync.Mutex
	var ready []int
	hooks := func(held []int) func(*Options) {
		return func(o *Options) {
			o.Hooks = Hooks{
				Held: func(context.Context, string, string, int) ([]int, error) { return held, nil },
				PartitionReady: func(db, version string, p, n int) {
					mu.Lock()
					ready = append(ready, p)
					mu.Unlock()
				},
			}
		}
	}
	// A peer holding partition 2, whose directory is copied below.
	peer := start(t, root, t.TempDir(), hooks([]int{2}))
	peer.waitState("db", "v1", "ACTIVE")
	h := start(t, root, t.TempDir(), hooks([]int{0}))
	h.waitState("db", "v1", "ACTIVE")
	ctx := context.Background()

	if err := h.m.Replicas().Add(ctx, dbver.Of("db", "v1").Partition(1), nil); err != nil {
		t.Fatal(err)
	}
	peerDir, ok := peer.m.Views().PartitionDir(dbver.Of("db", "v1").Partition(2))
	if !ok {
		t.Fatal("the peer does not report its partition's directory")
	}
	fromPeer := false
	err := h.m.Replicas().Add(ctx, dbver.Of("db", "v1").Partition(2), func(_ context.Context, dir string) error {
		fromPeer = true
		copyDir(t, peerDir, dir)
		os.Remove(dir + "/LOCK")
		return nil
	})
	if err != nil || !fromPeer {
		t.Fatalf("AddPartition from a peer: %v (copied %v)", err, fromPeer)
	}
	if got := h.m.Views().HeldPartitions("db", "v1"); !slices.Equal(got, []int{0, 1, 2}) {
		t.Fatalf("held %v after adding 1 and 2", got)
	}
	for _, r := range testutil.Records(300, "v1") {
		if val, _, err := h.get("db", "", string(r.Key)); err != nil || val != string(r.Value) {
			t.Fatalf("%s (partition %d): %q, %v", r.Key, partitioner.Partition(r.Key, 3), val, err)
		}
	}
	if man, err := h.store.ReadManifest(dbver.Of("db", "v1")); err != nil || !slices.Equal(man.Partitions, []int{0, 1, 2}) {
		t.Fatalf("manifest partitions %v, %v", man.Partitions, err)
	}
	mu.Lock()
	if !slices.Contains(ready, 1) || !slices.Contains(ready, 2) {
		t.Errorf("PartitionReady saw %v", ready)
	}
	mu.Unlock()

	if err := h.m.Replicas().Drop(ctx, dbver.Of("db", "v1").Partition(1)); err != nil {
		t.Fatal(err)
	}
	if got := h.m.Views().HeldPartitions("db", "v1"); !slices.Equal(got, []int{0, 2}) {
		t.Fatalf("held %v after dropping 1", got)
	}
	for _, r := range testutil.Records(300, "v1") {
		_, _, err := h.get("db", "", string(r.Key))
		if p := partitioner.Partition(r.Key, 3); p == 1 && !errors.Is(err, ErrPartitionNotHeld) {
			t.Fatalf("%s of a dropped partition: %v", r.Key, err)
		}
	}
	if err := h.m.Replicas().Add(ctx, dbver.Of("db", "nope").Partition(0), nil); !errors.Is(err, replica.ErrNotServed) {
		t.Fatalf("AddPartition of an unknown version: %v", err)
	}
}
