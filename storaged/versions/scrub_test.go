package versions

import (
	"bytes"
	"os"
	"testing"
	"time"

	"spangle/shared/dbver"
	"spangle/shared/partitioner"
	"spangle/shared/wire"
	"spangle/storaged/internal/testutil"
)

// A restart that reuses a local version scrubs it: a block that rotted
// while the node was down is found without any lookup, the partition is
// rebuilt from the source, and its key answers. With scrub_rate 0 the
// reused version is not read back.
func TestScrubAfterRestart(t *testing.T) {
	root := t.TempDir()
	writeV(t, root, "db", "v1")
	storeDir := t.TempDir()
	h := start(t, root, storeDir, nil)
	h.waitState("db", "v1", wire.StateActive)
	h.stop()

	p := partitioner.Partition([]byte("key-000000"), 3)
	dir := h.store.PartitionDir(dbver.Of("db", "v1").Partition(p))
	tables := testutil.CorruptFirstBlock(t, dir)
	bad, err := os.ReadFile(tables[0])
	if err != nil {
		t.Fatal(err)
	}

	off := start(t, root, storeDir, nil)
	off.waitState("db", "v1", wire.StateActive)
	time.Sleep(50 * time.Millisecond)
	if got := off.metric("spangle_storaged_scrub_bytes_total"); got != 0 {
		t.Fatalf("scrub_rate 0 read %v bytes", got)
	}
	off.stop()

	h2 := start(t, root, storeDir, func(o *Options) { o.Repair.ScrubRate = 100e6 })
	h2.waitState("db", "v1", wire.StateActive)
	if _, r, _ := h2.m.Views().Counts(); r != 1 {
		t.Fatalf("restart reused %d versions, want 1", r)
	}
	waitFor(t, "the scrub finding the corrupt block and the rebuild", func() bool {
		return h2.metric(`spangle_storaged_partitions_corrupt_total{found_by="scrub"}`) == 1 &&
			h2.metric(`spangle_storaged_partition_repairs_total{result="source"}`) == 1
	})
	if got := h2.metric(`spangle_storaged_partitions_corrupt_total{found_by="lookup"}`); got != 0 {
		t.Fatalf("lookups found %v corrupt partitions; the scrub should have", got)
	}
	if val, _, err := h2.get("db", "", "key-000000"); err != nil || val != "value-0-v1" {
		t.Fatalf("key of the rebuilt partition: %q, %v", val, err)
	}
	if got := h2.metric("spangle_storaged_scrub_bytes_total"); got == 0 {
		t.Fatal("the scrub counted no bytes")
	}
	now, err := os.ReadFile(tables[0])
	if err != nil || bytes.Equal(now, bad) {
		t.Fatalf("the corrupt table is still in place (%v)", err)
	}
}
