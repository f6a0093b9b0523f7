package versions

import (
	"context"
	"fmt"
	"strings"
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
