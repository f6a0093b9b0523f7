package versions

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"spangle/shared/dbver"
	"spangle/shared/wire"
)

// TestLoadCopiesFromPeersFirst: a load asks Hooks.CopyPartition for each
// partition first; what a peer gives is served as it came, checked, and
// only the rest is built from the source. A partition no peer serves
// (ErrNoPeer) is built from the source without a word.
func TestLoadCopiesFromPeersFirst(t *testing.T) {
	root := t.TempDir()
	writeV(t, root, "db", "v1")
	peer := start(t, root, t.TempDir(), nil)
	peer.waitState("db", "v1", wire.StateActive)
	peer.stop()

	var asked []int
	log, logs := observed(t)
	h := start(t, root, t.TempDir(), func(o *Options) {
		o.Log = log
		o.Hooks.CopyPartition = func(ctx context.Context, part dbver.Partition, dir string) error {
			p := part.P
			asked = append(asked, p) // loads of one version are sequential
			if p != 1 {
				return fmt.Errorf("%w: partition %d", ErrNoPeer, p)
			}
			copyDir(t, peer.store.PartitionDir(part), dir)
			return nil
		}
	})
	h.waitState("db", "v1", wire.StateActive)
	if fmt.Sprint(asked) != "[0 1 2]" {
		t.Errorf("peers asked for partitions %v, want [0 1 2]", asked)
	}
	for _, e := range logs.All() {
		if strings.HasPrefix(e.Message, "no good copy") {
			t.Errorf("logged %q %v for a partition no peer serves", e.Message, fieldsOf(e))
		}
	}
	for i := 0; i < 300; i++ {
		key := fmt.Sprintf("key-%06d", i)
		if val, _, err := h.get("db", "", key); err != nil || val != fmt.Sprintf("value-%d-v1", i) {
			t.Fatalf("%s: %q, %v", key, val, err)
		}
	}
	if peer, src := h.metric(`spangle_storaged_partitions_loaded_total{from="peer"}`), h.metric(`spangle_storaged_partitions_loaded_total{from="source"}`); peer != 1 || src != 2 {
		t.Errorf("partitions loaded: %v from a peer, %v from the source; want 1 and 2", peer, src)
	}
}

// TestLoadCopiesOnlyWhatPeersServedAtDecision: with Hooks.PeerServed, a
// load asks peers only for the partitions they served when the version's
// partitions were decided; the others are built from the source even if
// a peer could give them by the time the build starts (it built them
// from the same source meanwhile).
func TestLoadCopiesOnlyWhatPeersServedAtDecision(t *testing.T) {
	root := t.TempDir()
	writeV(t, root, "db", "v1")
	peer := start(t, root, t.TempDir(), nil)
	peer.waitState("db", "v1", wire.StateActive)
	peer.stop()

	var (
		mu    sync.Mutex
		asked []int
		seen  []int
	)
	h := start(t, root, t.TempDir(), func(o *Options) {
		o.Hooks.PeerServed = func(db, version string, p int) bool {
			mu.Lock()
			seen = append(seen, p)
			mu.Unlock()
			return p == 2
		}
		o.Hooks.CopyPartition = func(ctx context.Context, part dbver.Partition, dir string) error {
			mu.Lock()
			asked = append(asked, part.P)
			mu.Unlock()
			copyDir(t, peer.store.PartitionDir(part), dir) // every partition is there to copy
			return nil
		}
	})
	h.waitState("db", "v1", wire.StateActive)
	mu.Lock()
	if fmt.Sprint(seen) != "[0 1 2]" || fmt.Sprint(asked) != "[2]" {
		t.Errorf("PeerServed asked for %v, peers for %v; want [0 1 2] and [2]", seen, asked)
	}
	mu.Unlock()
	for i := 0; i < 300; i++ {
		key := fmt.Sprintf("key-%06d", i)
		if val, _, err := h.get("db", "", key); err != nil || val != fmt.Sprintf("value-%d-v1", i) {
			t.Fatalf("%s: %q, %v", key, val, err)
		}
	}
	if peer, src := h.metric(`spangle_storaged_partitions_loaded_total{from="peer"}`), h.metric(`spangle_storaged_partitions_loaded_total{from="source"}`); peer != 1 || src != 2 {
		t.Errorf("partitions loaded: %v from a peer, %v from the source; want 1 and 2", peer, src)
	}
}
