package integration

import (
	"os"
	"path/filepath"
	"testing"
)

// TestPinnedVersionFromPeers: three nodes serve v1, then v2; a _PIN
// marker rolls the db back to v1. A node that then loses its local store
// and restarts loads the pinned v1 again from the peers that serve it,
// reading no record from the source.
func TestPinnedVersionFromPeers(t *testing.T) {
	zks, root, nodes := startCluster(t)
	addVersionWhenRegistered(t, zks, root, "v2", nodes)
	if err := os.WriteFile(filepath.Join(root, testDB, "_PIN"), []byte("v1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		n.refresh()
	}
	waitActive(t, zkDeadline, testDB, "v1", nodes...)

	lost := nodes[0]
	lost.Stop()
	if err := os.RemoveAll(lost.store); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(lost.store, 0o755); err != nil {
		t.Fatal(err)
	}
	lost.Restart()
	waitActive(t, zkDeadline, testDB, "v1", lost)

	const (
		fromPeer   = `spangle_storaged_partitions_loaded_total{from="peer"}`
		fromSource = `spangle_storaged_partitions_loaded_total{from="source"}`
		records    = "spangle_storaged_records_loaded_total"
	)
	st, err := lost.status()
	if err != nil {
		t.Fatal(err)
	}
	held := len(st.DBs[testDB].Versions["v1"].Partitions)
	if held == 0 {
		t.Fatalf("the restarted node holds no partition of v1: %+v", st.DBs[testDB])
	}
	if got := lost.metric(fromPeer); got < float64(held) {
		t.Errorf("%s = %v, want at least %d (every partition it holds)", fromPeer, got, held)
	}
	if got := lost.metric(fromSource); got > 0 {
		t.Errorf("%s = %v, want 0", fromSource, got)
	}
	if got := lost.metric(records); got != 0 {
		t.Errorf("%s = %v, want 0: the pinned version came from the peers", records, got)
	}
	for i := 0; i < testKeys; i += 97 {
		if code, body, v, err := lost.get(testDB, keyOf(i)); err == nil && code == 200 && (body != valueOf(i, "v1") || v != "v1") {
			t.Errorf("%s: %q under version %q, want %q under v1", keyOf(i), body, v, valueOf(i, "v1"))
		}
	}
	t.Logf("the restarted node copied %d partitions of the pinned v1 from its peers", held)
}
