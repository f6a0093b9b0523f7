package integration

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"spangle/shared/wire"
	"spangle/storaged/internal/testutil"
)

// repairDeadline bounds a rebuild of one small partition, with its
// retries, on a loaded machine.
const repairDeadline = 30 * time.Second

// partitionDir is where the node keeps partition p of the test db.
func (n *node) partitionDir(version string, p int) string {
	return filepath.Join(n.store, testDB, version, "p-"+strconv.Itoa(p))
}

// firstKeyOf is the index of the smallest key of partition p: it sits in
// the first block of its table, the one testutil.CorruptFirstBlock rots.
func firstKeyOf(t testing.TB, p int) int {
	for i := 0; i < testKeys; i++ {
		if partitionOf(i) == p {
			return i
		}
	}
	t.Fatalf("no key in partition %d", p)
	return 0
}

const (
	corruptByLookup = `spangle_storaged_partitions_corrupt_total{found_by="lookup"}`
	corruptByScrub  = `spangle_storaged_partitions_corrupt_total{found_by="scrub"}`
	repairing       = `spangle_storaged_partitions_repairing`
	repairedSource  = `spangle_storaged_partition_repairs_total{result="source"}`
	repairedPeer    = `spangle_storaged_partition_repairs_total{result="peer"}`
)

// TestCorruptBlockRebuiltFromSource: a byte of a table flips in the local
// store of a standalone storaged while it serves. The lookup that reads
// the block answers 503 saying so (not 500), /healthz keeps the version
// ACTIVE and lists the partition as corrupt, the metrics count it, and
// other partitions answer meanwhile. The rebuild from the source fails
// while the source's files are away and is retried; once they are back
// the partition is rebuilt and the key answers 200 again.
func TestCorruptBlockRebuiltFromSource(t *testing.T) {
	root := t.TempDir()
	writeVersion(t, root, "v1")
	n := startStandalone(t, root, t.TempDir())
	waitActive(t, zkDeadline, testDB, "v1", n)

	i := firstKeyOf(t, 0)
	p := partitionOf(i)
	src, away := filepath.Join(root, testDB, "v1"), filepath.Join(root, "away")
	if err := os.Rename(src, away); err != nil {
		t.Fatal(err)
	}
	testutil.CorruptFirstBlock(t, n.partitionDir("v1", p))

	code, body, version, err := n.get(testDB, keyOf(i))
	if err != nil || code != 503 || !strings.Contains(body, "corrupt") || version != "v1" {
		t.Fatalf("lookup in the corrupt block: %d %q (version %q), %v; want 503 saying the partition is corrupt", code, body, version, err)
	}
	waitFor(t, repairDeadline, "/healthz listing the corrupt partition", func() bool {
		return reflect.DeepEqual(n.health("v1").CorruptPartitions, []int{p})
	})
	if h := n.health("v1"); h.State != wire.StateActive || !strings.Contains(h.Reason, "corrupt") {
		t.Fatalf("/healthz while the partition is bad: %+v; want ACTIVE with the reason", h)
	}
	if got := n.metric(corruptByLookup); got != 1 {
		t.Errorf("%s = %v, want 1", corruptByLookup, got)
	}
	if got := n.metric(repairing); got != 1 {
		t.Errorf("%s = %v, want 1", repairing, got)
	}
	for j := 0; j < testKeys; j += 97 {
		if partitionOf(j) == p {
			continue
		}
		if code, body, _, err := n.get(testDB, keyOf(j)); err != nil || code != 200 || body != valueOf(j, "v1") {
			t.Fatalf("key %d of another partition while one is bad: %d %q %v", j, code, body, err)
		}
	}

	if err := os.Rename(away, src); err != nil {
		t.Fatal(err)
	}
	waitFor(t, repairDeadline, "the partition rebuilt from the source", func() bool {
		code, body, _, err := n.get(testDB, keyOf(i))
		return err == nil && code == 200 && body == valueOf(i, "v1")
	})
	if h := n.health("v1"); h.State != wire.StateActive || h.CorruptPartitions != nil {
		t.Errorf("/healthz after the rebuild: %+v", h)
	}
	if got := n.metric(repairedSource); got != 1 {
		t.Errorf("%s = %v, want 1", repairedSource, got)
	}
	if got := n.metric(repairing); got != 0 {
		t.Errorf("%s = %v after the rebuild, want 0", repairing, got)
	}
}

// TestScrubAfterRestart: a block rots while storaged is down. The restart
// reuses the local version, serves it at once, and scrubs it in the
// background: the scrub, not a lookup, finds the bad block, the
// partition is rebuilt from the source, and its keys answer.
func TestScrubAfterRestart(t *testing.T) {
	root := t.TempDir()
	writeVersion(t, root, "v1")
	n := startStandalone(t, root, t.TempDir())
	waitActive(t, zkDeadline, testDB, "v1", n)
	n.Stop()

	i := firstKeyOf(t, 0)
	p := partitionOf(i)
	testutil.CorruptFirstBlock(t, n.partitionDir("v1", p))
	n.Restart()
	waitActive(t, zkDeadline, testDB, "v1", n)
	if got := n.metric(`spangle_storaged_version_loads_total{result="reused"}`); got != 1 {
		t.Fatalf("the restart reused %v versions, want 1", got)
	}
	waitFor(t, repairDeadline, "the scrub finding the bad block and the partition rebuilt", func() bool {
		return n.metric(corruptByScrub) == 1 && n.metric(repairedSource) == 1
	})
	if got := n.metric(corruptByLookup); got != 0 {
		t.Errorf("%s = %v; the scrub should have found it", corruptByLookup, got)
	}
	for _, j := range []int{i, i + 1, testKeys - 1} {
		if code, body, _, err := n.get(testDB, keyOf(j)); err != nil || code != 200 || body != valueOf(j, "v1") {
			t.Fatalf("key %d after the scrub's rebuild: %d %q %v", j, code, body, err)
		}
	}
	if h := n.health("v1"); h.State != wire.StateActive || h.CorruptPartitions != nil {
		t.Errorf("/healthz after the rebuild: %+v", h)
	}
}

// TestCorruptBlockCopiedFromPeer: three storaged on a real ZooKeeper,
// every partition on two of them. A block of one node's copy rots; the
// lookup there answers 503 (routerd tries the other replica), and the
// node copies the partition from the peer that holds it, checks it and
// swaps it in: the key answers 200 on that node again.
func TestCorruptBlockCopiedFromPeer(t *testing.T) {
	_, _, nodes := startCluster(t)
	n := nodes[0]
	st, err := n.status()
	if err != nil {
		t.Fatal(err)
	}
	held := st.DBs[testDB].Versions["v1"].Partitions
	if len(held) == 0 {
		t.Fatalf("%s holds no partition", n.addr)
	}
	p := held[0]
	i := firstKeyOf(t, p)
	waitFor(t, zkDeadline, "another replica of the partition published", func() bool {
		st, err := n.status()
		return err == nil && st.Cluster != nil && len(st.Cluster.Version(testDB, "v1").Replicas[p]) == testRepl
	})
	testutil.CorruptFirstBlock(t, n.partitionDir("v1", p))

	code, body, _, err := n.get(testDB, keyOf(i))
	if err != nil || code != 503 || !strings.Contains(body, "corrupt") {
		t.Fatalf("lookup in the corrupt block: %d %q, %v; want 503", code, body, err)
	}
	waitFor(t, repairDeadline, "the partition copied from a peer", func() bool {
		code, body, _, err := n.get(testDB, keyOf(i))
		return err == nil && code == 200 && body == valueOf(i, "v1")
	})
	if got := n.metric(repairedPeer); got != 1 {
		t.Errorf("%s = %v, want 1 (source: %v)", repairedPeer, got, n.metric(repairedSource))
	}
	if got := n.metric(corruptByLookup); got != 1 {
		t.Errorf("%s = %v, want 1", corruptByLookup, got)
	}
	if st, err := n.status(); err != nil || !slices.Equal(st.DBs[testDB].Versions["v1"].Partitions, held) {
		t.Errorf("%s holds %v after the rebuild, want %v (%v)", n.addr, st.DBs[testDB].Versions["v1"].Partitions, held, err)
	}
}
