package integration

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"spangle/shared/placement"
	"spangle/shared/topo"
	"spangle/shared/zktest"
)

// startCluster starts ZooKeeper and three nodes, and once all three are
// registered (so that none decides with fewer peers on a slow machine)
// adds v1 of the test db and waits until it is ACTIVE on all of them.
func startCluster(t *testing.T) (*zktest.Server, string, []*node) {
	t.Helper()
	zks := zktest.Start(t)
	root := t.TempDir()
	nodes := []*node{startNode(t, zks.Addr(), root), startNode(t, zks.Addr(), root), startNode(t, zks.Addr(), root)}
	addVersionWhenRegistered(t, zks, root, "v1", nodes)
	return zks, root, nodes
}

// addVersionWhenRegistered waits until every node is registered, then
// writes version, makes the nodes re-scan, and waits until it is ACTIVE.
func addVersionWhenRegistered(t *testing.T, zks *zktest.Server, root, version string, nodes []*node) {
	t.Helper()
	waitFor(t, zkDeadline, "every node registered", func() bool {
		return len(zkChildren(t, zks.Addr(), testPaths.Nodes())) == len(nodes)
	})
	writeVersion(t, root, version)
	for _, n := range nodes {
		n.refresh()
	}
	waitActive(t, zkDeadline, testDB, version, nodes...)
}

// TestRingAssignment: three nodes, eight partitions, replication two:
// every partition has exactly two holders, each node holds what the ring
// dealt it and answers 421 for the rest, and together they serve every key.
func TestRingAssignment(t *testing.T) {
	zks, _, nodes := startCluster(t)
	shards := addrs(nodes...)
	holders := placement.Holders(shards, testParts, testRepl)

	for _, n := range nodes {
		st, err := n.status()
		if err != nil {
			t.Fatal(err)
		}
		want := placement.Assign(n.addr, shards, testParts, testRepl)
		if got := st.DBs[testDB].Versions["v1"].Partitions; !reflect.DeepEqual(got, want) {
			t.Errorf("%s holds %v, the ring dealt it %v", n.addr, got, want)
		}
		if st.Mode != "cluster" || st.Cluster == nil || len(st.Cluster.Nodes) != 3 {
			t.Fatalf("%s status lacks the cluster map: %+v", n.addr, st)
		}
		// The map mirrors ZooKeeper: a version is active once every
		// partition has one replica, and another node's publication of
		// the second may reach this node's map a moment later.
		var mismatch string
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(25 * time.Millisecond) {
			mismatch = ""
			v := st.Cluster.Version(testDB, "v1")
			for p := 0; p < testParts && mismatch == ""; p++ {
				if got := v.Replicas[p]; !reflect.DeepEqual(got, sortedCopy(holders[p])) {
					mismatch = fmt.Sprintf("partition %d on %v, want %v", p, got, holders[p])
				}
			}
			if mismatch == "" || time.Now().After(deadline) {
				break
			}
			if st, err = n.status(); err != nil {
				t.Fatal(err)
			}
		}
		if mismatch != "" {
			t.Errorf("%s's cluster map: %s", n.addr, mismatch)
		}
	}

	// ZooKeeper itself holds exactly the layout of docs/design.md.
	wantNodes := []string{}
	for _, a := range shards {
		wantNodes = append(wantNodes, topo.NodeName(a, a))
	}
	if got := zkChildren(t, zks.Addr(), testPaths.Nodes()); !reflect.DeepEqual(got, wantNodes) {
		t.Errorf("nodes/ = %v, want %v", got, wantNodes)
	}
	perPartition := make([]int, testParts)
	for _, k := range zkChildren(t, zks.Addr(), testPaths.Version(testDB, "v1")) {
		p, _, err := topo.ParseReplicaName(k)
		if err != nil {
			t.Fatal(err)
		}
		perPartition[p]++
	}
	for p, c := range perPartition {
		if c != testRepl {
			t.Errorf("partition %d has %d replica znodes, want %d", p, c, testRepl)
		}
	}

	// Every key: 200 from its two holders, 421 from the other node.
	for i := 0; i < testKeys; i++ {
		served := 0
		for _, n := range nodes {
			code, body, ver, err := n.get(testDB, keyOf(i))
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case code == 200 && body == valueOf(i, "v1") && ver == "v1":
				served++
			case code == 421:
			default:
				t.Fatalf("%s: %s -> %d %q (version %q)", n.addr, keyOf(i), code, body, ver)
			}
		}
		if served != testRepl {
			t.Fatalf("%s served by %d nodes, want %d", keyOf(i), served, testRepl)
		}
	}
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	slices.Sort(out)
	return out
}

// TestNodeDeath: a node killed without goodbye loses its znodes once its
// session times out; the others go on serving their partitions.
func TestNodeDeath(t *testing.T) {
	zks, _, nodes := startCluster(t)
	shards := addrs(nodes...)
	dead := nodes[2]
	killed := time.Now()
	dead.Kill()

	waitFor(t, zkDeadline, "the dead node's znodes to expire", func() bool {
		for _, k := range zkChildren(t, zks.Addr(), testPaths.Nodes()) {
			if k == topo.NodeName(dead.addr, dead.addr) {
				return false
			}
		}
		return len(replicaEntries(t, zks.Addr(), "v1", dead.addr)) == 0
	})
	gone := time.Since(killed)
	t.Logf("dead node's znodes gone %v after the kill (session timeout %v)", gone.Round(10*time.Millisecond), testSessionTimeout)
	if gone < testSessionTimeout/2 {
		t.Errorf("znodes went after %v, before the session could time out (%v): was the session closed?", gone, testSessionTimeout)
	}

	for _, n := range nodes[:2] {
		held := map[int]bool{}
		for _, p := range placement.Assign(n.addr, shards, testParts, testRepl) {
			held[p] = true
		}
		for i := 0; i < testKeys; i++ {
			if !held[partitionOf(i)] {
				continue
			}
			code, body, _, err := n.get(testDB, keyOf(i))
			if err != nil || code != 200 || body != valueOf(i, "v1") {
				t.Fatalf("%s after a peer died: %s -> %d %q %v", n.addr, keyOf(i), code, body, err)
			}
		}
		// The survivors' cached maps drop the dead node too.
		waitFor(t, zkDeadline, n.addr+"'s map to drop the dead node", func() bool {
			st, err := n.status()
			if err != nil || st.Cluster == nil {
				return false
			}
			_, there := st.Cluster.Nodes[dead.addr]
			return !there && len(st.Cluster.Nodes) == 2
		})
	}
}
