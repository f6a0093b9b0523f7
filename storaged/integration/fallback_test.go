package integration

import (
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"spangle/shared/proctest"
	"spangle/shared/topo"
	"spangle/shared/wire"
	"spangle/shared/zktest"
)

// startStandalone runs storaged without ZooKeeper on source with the
// given local store, and waits until it answers (/healthz is not 200
// before it serves some db).
func startStandalone(t testing.TB, source, store string, extra ...string) *node {
	t.Helper()
	addr := proctest.FreeAddr(t)
	args := append([]string{"--source", source, "--local-store", store, "--bind", addr,
		"--version-retention", testRetention}, extra...)
	n := &node{Process: proctest.Start(t, storagedBin, args...), addr: addr, store: store}
	n.waitUp(t)
	return n
}

// waitUp waits until the node answers its status page.
func (n *node) waitUp(t testing.TB) {
	t.Helper()
	waitFor(t, 30*time.Second, n.addr+" up", func() bool { _, err := n.status(); return err == nil })
}

// corruptVersion writes version and then damages the file of partition p.
func corruptVersion(t *testing.T, root, version string, p int) {
	t.Helper()
	writeVersion(t, root, version)
	path := filepath.Join(root, testDB, version, "part-0000"+strconv.Itoa(p))
	if err := os.WriteFile(path, []byte("SEQ\x06not a sequence file"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// expectServes checks that every 97th key reads back with version's value.
func expectServes(t *testing.T, n *node, version string) {
	t.Helper()
	for i := 0; i < testKeys; i += 97 {
		code, body, v, err := n.get(testDB, keyOf(i))
		if err != nil || code != http.StatusOK || body != valueOf(i, version) || v != version {
			t.Fatalf("%s: %d %q from version %q, %v; want %s's value", keyOf(i), code, body, v, err, version)
		}
	}
}

// Issue 16, item 1: a corrupt newest version does not leave the db
// unserved, at a fresh start nor after a restart on the same local store;
// the restart serves the previous version from its local store.
func TestCorruptNewestStandalone(t *testing.T) {
	root, store := t.TempDir(), t.TempDir()
	writeVersion(t, root, "v1")
	writeVersion(t, root, "v2")
	corruptVersion(t, root, "v3", 2)
	n := startStandalone(t, root, store)
	waitFor(t, 30*time.Second, "v2 ACTIVE and v3 ERROR", func() bool {
		return n.state(testDB, "v2") == wire.StateActive && n.state(testDB, "v3") == wire.StateError
	})
	if r := n.health("v3").Reason; !strings.Contains(r, "part-00002") {
		t.Fatalf("v3's reason %q does not name the corrupt file", r)
	}
	expectServes(t, n, "v2")
	// Wait for v2's local copy to be marked complete, as a restart needs.
	waitFor(t, 30*time.Second, "v2 complete in the local store", func() bool {
		b, err := os.ReadFile(filepath.Join(store, testDB, "v2", "spangle-version.json"))
		return err == nil && strings.Contains(string(b), `"complete": true`)
	})

	n.Stop()
	n.Restart()
	n.waitUp(t)
	waitFor(t, 30*time.Second, "v2 ACTIVE and v3 ERROR after the restart", func() bool {
		return n.state(testDB, "v2") == wire.StateActive && n.state(testDB, "v3") == wire.StateError
	})
	expectServes(t, n, "v2")
	if got := n.metric("spangle_storaged_records_loaded_total"); got != 0 {
		t.Fatalf("the restart read %v records from the source; want v2 reused from the local store", got)
	}
	if got := n.metric(`spangle_storaged_version_loads_total{result="reused"}`); got != 1 {
		t.Fatalf("versions reused after the restart: %v, want 1", got)
	}
}

// Issue 16, item 3: a version whose files are still being copied in is
// not loaded until they settle, and one loaded before the copy finished is
// loaded again once its file list changes.
func TestHalfCopiedVersion(t *testing.T) {
	full := t.TempDir()
	writeVersion(t, full, "v1")
	copyParts := func(root string, parts ...int) {
		t.Helper()
		dir := filepath.Join(root, testDB, "v1")
		os.MkdirAll(dir, 0o755)
		for _, p := range parts {
			name := "part-0000" + strconv.Itoa(p)
			b, err := os.ReadFile(filepath.Join(full, testDB, "v1", name))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	half, rest := []int{0, 1, 2, 3}, []int{4, 5, 6, 7}

	t.Run("settle", func(t *testing.T) {
		root := t.TempDir()
		n := startStandalone(t, root, t.TempDir(), "--settle-time", "2s")
		copyParts(root, half...)
		n.refresh()
		time.Sleep(500 * time.Millisecond)
		if st := n.state(testDB, "v1"); st != wire.StateSettling {
			t.Fatalf("v1 is %q half a second after half of it was copied; want it SETTLING, not loaded before it settles", st)
		}
		copyParts(root, rest...)
		n.refresh()
		waitFor(t, 30*time.Second, "v1 ACTIVE", func() bool { return n.state(testDB, "v1") == wire.StateActive })
		st, err := n.status()
		if err != nil {
			t.Fatal(err)
		}
		if got := st.DBs[testDB].Versions["v1"].NumPartitions; got != testParts {
			t.Fatalf("v1 loaded with %d partitions, want %d", got, testParts)
		}
		expectServes(t, n, "v1")
	})

	t.Run("reload", func(t *testing.T) {
		root := t.TempDir()
		n := startStandalone(t, root, t.TempDir(), "--settle-time", "0")
		copyParts(root, half...)
		n.refresh()
		waitFor(t, 30*time.Second, "half of v1 ACTIVE", func() bool { return n.state(testDB, "v1") == wire.StateActive })
		copyParts(root, rest...)
		n.refresh()
		waitFor(t, 30*time.Second, "v1 loaded again with every partition", func() bool {
			st, err := n.status()
			v := st.DBs[testDB].Versions["v1"]
			return err == nil && v.State == wire.StateActive && v.NumPartitions == testParts && len(v.Partitions) == testParts
		})
		expectServes(t, n, "v1")
		if got := n.metric("spangle_storaged_version_reloads_total"); got != 1 {
			t.Fatalf("spangle_storaged_version_reloads_total = %v, want 1", got)
		}
	})
}

// Issue 16, item 4: a data file that is a symlink leaving the root fails
// the version, naming the file; the previous version keeps serving.
func TestDataFileLeavingRoot(t *testing.T) {
	root := t.TempDir()
	writeVersion(t, root, "v1")
	n := startStandalone(t, root, t.TempDir())
	waitFor(t, 30*time.Second, "v1 ACTIVE", func() bool { return n.state(testDB, "v1") == wire.StateActive })
	writeVersion(t, root, "v2")
	outside := filepath.Join(t.TempDir(), "part-00003")
	bad := filepath.Join(root, testDB, "v2", "part-00003")
	if err := os.Rename(bad, outside); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, bad); err != nil {
		t.Fatal(err)
	}
	n.refresh()
	waitFor(t, 30*time.Second, "v2 ERROR", func() bool { return n.state(testDB, "v2") == wire.StateError })
	if r := n.health("v2").Reason; !strings.Contains(r, "part-00003") {
		t.Fatalf("v2's reason %q does not name the file", r)
	}
	expectServes(t, n, "v1")
}

// Issue 16, item 1 in cluster mode: the newest version fails on one node
// only (its copy of the source is corrupt), so with one replica per
// partition it can never be complete, and the nodes that loaded it wait.
// They fall back on the version before, which becomes complete and is
// served everywhere; the broken one never is.
func TestCorruptNewestCluster(t *testing.T) {
	zks := zktest.Start(t)
	var nodes []*node
	for i := 0; i < 3; i++ {
		root := t.TempDir()
		writeVersion(t, root, "v1")
		writeVersion(t, root, "v2")
		if i == 0 {
			corruptVersion(t, root, "v3", 0)
		} else {
			writeVersion(t, root, "v3")
		}
		nodes = append(nodes, startNode(t, zks.Addr(), root, "--replication", "1"))
	}
	waitActive(t, zkDeadline, testDB, "v2", nodes...)
	if st := nodes[0].state(testDB, "v3"); st != wire.StateError {
		t.Fatalf("v3 on the node with the corrupt copy is %q, want ERROR", st)
	}
	for _, n := range nodes {
		if st := n.state(testDB, "v3"); st == wire.StateActive {
			t.Fatalf("%s serves the incomplete v3", n.addr)
		}
	}
	// Each key is answered by the node holding its partition, from v2;
	// the others answer 421.
	for i := 0; i < testKeys; i += 97 {
		answered := 0
		for _, n := range nodes {
			code, body, v, err := n.get(testDB, keyOf(i))
			switch {
			case err != nil:
				t.Fatal(err)
			case code == http.StatusOK && body == valueOf(i, "v2") && v == "v2":
				answered++
			case code != http.StatusMisdirectedRequest:
				t.Fatalf("%s on %s: %d %q from %q", keyOf(i), n.addr, code, body, v)
			}
		}
		if answered != 1 {
			t.Fatalf("%s answered from v2 by %d nodes, want 1", keyOf(i), answered)
		}
	}
	// v2 is complete in ZooKeeper: every partition has a replica.
	covered := map[int]bool{}
	for _, k := range zkChildren(t, zks.Addr(), testPaths.Version(testDB, "v2")) {
		if p, _, err := topo.ParseReplicaName(k); err == nil {
			covered[p] = true
		}
	}
	if len(covered) != testParts {
		t.Fatalf("v2's partitions with a replica in ZooKeeper: %v, want all %d", covered, testParts)
	}
}
