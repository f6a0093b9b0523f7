package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"spangle/shared/topo"
	"spangle/shared/wire"
	"spangle/shared/zktest"
)

// TestRemovedDBIsNotFoundOnZooKeeper: three storaged in cluster mode
// serve two dbs through a real ZooKeeper, and routerd follows them there.
// One db is removed from the source root and every node re-scans: the
// nodes withdraw its partitions and the last one deletes its version
// entries, so ZooKeeper's map no longer lists it and routerd answers 404
// without a version for its keys (not 502, as for a db whose replicas
// are unreachable), and its /healthz no longer names it. The other db is
// still served.
func TestRemovedDBIsNotFoundOnZooKeeper(t *testing.T) {
	zks := zktest.Start(t)
	const cluster = "gone"
	const keep = "kept"
	root := t.TempDir()
	nodes, w := startCluster(t, zks.Addr(), cluster, root, 3)
	writeVersion(t, root, testDB, "v1", testParts, testKeys)
	writeVersion(t, root, keep, "v1", testParts, 100)
	rescanAll(nodes)
	waitMap(t, w, 2*time.Minute, fullyReplicated(testDB, "v1", 2))
	waitMap(t, w, time.Minute, fullyReplicated(keep, "v1", 2))

	cfg := zkRouterdConfig(zks.Addr(), cluster)
	rd := startRouterd(t, cfg, nil, testDB)
	rd.waitServed(t, keep, "v1", 30*time.Second)
	client := &http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: time.Minute}
	defer client.CloseIdleConnections()
	path, kept := wire.KeyPath(testDB, []byte(keyName(7))), wire.KeyPath(keep, []byte(keyName(7)))
	if code, body, _, _ := get(t, client, rd.base+path); code != 200 || body != valueOf("v1", keyName(7)) {
		t.Fatalf("before the removal: %d %q", code, body)
	}

	if err := os.RemoveAll(filepath.Join(root, testDB)); err != nil {
		t.Fatal(err)
	}
	rescanAll(nodes)
	// The entries go once every node has withdrawn: ZooKeeper's map
	// drops the db, and routerd with it.
	waitNotFound(t, client, rd.base+path, w)
	waitMap(t, w, 10*time.Second, func(m *topo.Map) string {
		if names := m.VersionNames(testDB); len(names) > 0 {
			return fmt.Sprintf("%s still has version entries %v in ZooKeeper", testDB, names)
		}
		return ""
	})
	code, body, _, _ := get(t, client, rd.base+wire.PathHealth)
	var hz map[string]map[string]wire.Health
	if err := json.Unmarshal([]byte(body), &hz); err != nil {
		t.Fatalf("/healthz %q: %v", body, err)
	}
	if _, ok := hz[testDB]; ok || code != 200 || hz[keep]["v1"].State != wire.StateActive {
		t.Fatalf("routerd /healthz after the removal: %d %s; want 200 without %s, with %s v1 ACTIVE", code, body, testDB, keep)
	}
	if code, body, _, _ := get(t, client, rd.base+kept); code != 200 || body != valueOf("v1", keyName(7)) {
		t.Fatalf("the db left in the source, after the other's removal: %d %q", code, body)
	}
	if dbs := w.Map().DBNames(); slices.Contains(dbs, testDB) || !slices.Contains(dbs, keep) {
		t.Fatalf("ZooKeeper's map names the dbs %v; want %s and not %s", dbs, keep, testDB)
	}
}

// TestRemovedDBWhileANodeIsDead: a node is killed while it serves a db
// (its partitions stay in ZooKeeper until its session expires), then the
// db is removed from the source and the live nodes re-scan. They
// withdraw, but cannot delete the db's entries while the dead node's
// replicas are there: routerd answers 502 meanwhile, and still after the
// session expired, until a live node re-scans and tries again; then 404.
// The dead node, restarted after the removal, holds nothing of the db
// and does not bring it back.
func TestRemovedDBWhileANodeIsDead(t *testing.T) {
	zks := zktest.Start(t)
	const cluster = "dead"
	root := t.TempDir()
	const deadSession = 10 * time.Second
	nodes := []*storaged{
		startClusterStoraged(t, zks.Addr(), cluster, root),
		startClusterStoraged(t, zks.Addr(), cluster, root),
		startClusterStoraged(t, zks.Addr(), cluster, root, "--zk-session-timeout", deadSession.String()),
	}
	dead := nodes[2]
	w := watchRegistered(t, zks.Addr(), cluster, nodes)
	writeVersion(t, root, testDB, "v1", testParts, testKeys)
	rescanAll(nodes)
	waitMap(t, w, 2*time.Minute, fullyReplicated(testDB, "v1", 2))
	cfg := zkRouterdConfig(zks.Addr(), cluster)
	rd := startRouterd(t, cfg, nil, testDB)
	client := &http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: time.Minute}
	defer client.CloseIdleConnections()

	dead.Kill()
	if err := os.RemoveAll(filepath.Join(root, testDB)); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes[:2] {
		n.Signal(syscall.SIGHUP)
	}
	// Only the dead node's replicas are left; the live nodes have tried
	// (within a second of withdrawing) and found them.
	waitMap(t, w, time.Minute, func(m *topo.Map) string {
		v := m.Version(testDB, "v1")
		if v == nil {
			return fmt.Sprintf("%s v1 left the map while the dead node's replicas were registered", testDB)
		}
		for p, rs := range v.Replicas {
			for _, r := range rs {
				if r != dead.addr {
					return fmt.Sprintf("partition %d still published by %s", p, r)
				}
			}
		}
		return ""
	})
	time.Sleep(2 * time.Second)
	waitMap(t, w, deadSession+time.Minute, func(m *topo.Map) string {
		if _, ok := m.Nodes[dead.addr]; ok {
			return "the dead node is still registered"
		}
		return ""
	})
	// Nothing publishes the db, but its entries stay until a node that
	// withdrew it re-scans.
	if names := w.Map().VersionNames(testDB); !slices.Equal(names, []string{"v1"}) {
		t.Fatalf("%s versions in ZooKeeper before the re-scan: %v, want v1 still there", testDB, names)
	}
	path := wire.KeyPath(testDB, []byte(keyName(3)))
	if code, body, hdr, _ := get(t, client, rd.base+path); code != http.StatusBadGateway {
		t.Fatalf("before the re-scan: %d %q (version %q), want 502", code, body, hdr.Get(wire.HeaderVersion))
	}
	nodes[0].Signal(syscall.SIGHUP)
	waitNotFound(t, client, rd.base+path, w)

	dead.Restart()
	waitMap(t, w, time.Minute, func(m *topo.Map) string {
		if _, ok := m.Nodes[dead.addr]; !ok {
			return "the restarted node is not registered"
		}
		return ""
	})
	dead.Signal(syscall.SIGHUP)
	time.Sleep(2 * time.Second)
	if names := w.Map().VersionNames(testDB); len(names) > 0 {
		t.Fatalf("%s versions in ZooKeeper after the dead node restarted: %v", testDB, names)
	}
	if code, body, hdr, _ := get(t, client, rd.base+path); code != http.StatusNotFound || hdr.Get(wire.HeaderVersion) != "" {
		t.Fatalf("after the dead node restarted: %d %q (version %q), want 404 without a version", code, body, hdr.Get(wire.HeaderVersion))
	}
}

// waitNotFound waits a minute at most until routerd answers url 404
// without a version.
func waitNotFound(t *testing.T, client *http.Client, url string, w topo.Watcher) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		code, body, hdr, _ := get(t, client, url)
		if code == http.StatusNotFound && hdr.Get(wire.HeaderVersion) == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("a minute after the removal: %d %q (version %q), want 404 without a version; ZooKeeper lists versions %v of %s",
				code, body, hdr.Get(wire.HeaderVersion), w.Map().VersionNames(testDB), testDB)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
