package integration

import (
	"slices"
	"testing"
	"time"

	"spangle/shared/placement"
	"spangle/shared/topo"
	"spangle/shared/zktest"
)

// TestSessionExpiry: one node is cut off from ZooKeeper longer than its
// session timeout, so ZooKeeper expires its session and drops its
// znodes. It goes on serving meanwhile, and once it can reach ZooKeeper
// again it registers and publishes its partitions anew, without a
// restart.
func TestSessionExpiry(t *testing.T) {
	zks := zktest.Start(t)
	proxy := zks.Proxy(t)
	root := t.TempDir()
	nodes := []*node{startNode(t, zks.Addr(), root), startNode(t, zks.Addr(), root), startNode(t, proxy.Addr(), root)}
	addVersionWhenRegistered(t, zks, root, "v1", nodes)
	cut := nodes[2]
	pid := cut.PID()
	held := placement.Assign(cut.addr, addrs(nodes...), testParts, testRepl)
	entry := topo.NodeName(cut.addr, cut.addr)
	registered := func() bool {
		for _, k := range zkChildren(t, zks.Addr(), testPaths.Nodes()) {
			if k == entry {
				return true
			}
		}
		return false
	}

	proxy.Cut()
	waitFor(t, zkDeadline, "the cut-off node's session to expire", func() bool {
		return !registered() && len(replicaEntries(t, zks.Addr(), "v1", cut.addr)) == 0
	})
	for i := 0; i < testKeys; i += 3 {
		if !slices.Contains(held, partitionOf(i)) {
			continue
		}
		code, body, _, err := cut.get(testDB, keyOf(i))
		if err != nil || code != 200 || body != valueOf(i, "v1") {
			t.Fatalf("cut-off node: %s -> %d %q %v", keyOf(i), code, body, err)
		}
	}

	healed := time.Now()
	proxy.Heal()
	waitFor(t, zkDeadline, "the node to register and publish again", func() bool {
		return registered() && len(replicaEntries(t, zks.Addr(), "v1", cut.addr)) == len(held)
	})
	t.Logf("znodes back %v after the network healed", time.Since(healed).Round(10*time.Millisecond))
	if !cut.Running() || cut.PID() != pid {
		t.Fatal("the node was restarted")
	}
}
