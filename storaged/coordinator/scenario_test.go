package coordinator_test

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"

	"spangle/shared/placement"
	"spangle/shared/topo"
)

// runScenarios runs every scenario, each on a cluster of its own that
// newBackend makes.
func runScenarios(t *testing.T, newBackend func(t *testing.T) backend) {
	t.Run("RereplicateAfterNodeLoss", func(t *testing.T) { testRereplicate(t, newBackend(t)) })
	t.Run("LeaderKilledMidway", func(t *testing.T) { testLeaderKilled(t, newBackend(t)) })
	t.Run("RebalanceOnJoin", func(t *testing.T) { testRebalanceOnJoin(t, newBackend(t)) })
	t.Run("PruneSupersededVersion", func(t *testing.T) { testPruneSuperseded(t, newBackend(t)) })
	t.Run("OnlyTheLeaderPrunes", func(t *testing.T) { testOnlyLeaderPrunes(t, newBackend(t)) })
}

// A node dies for good: after rereplicate_after its copies are fetched
// by the others, only those copies move, and every partition keeps a
// replica meanwhile.
func testRereplicate(t *testing.T, b backend) {
	const after = time.Second
	c := newCluster(t, b, clusterOpts{strategy: placement.Sequins{}, replication: 2, rereplicateAfter: after, fetchDelay: 50 * time.Millisecond}, 4)
	lead := c.leader()
	victim := c.follower(lead)
	lost := len(victim.holder.Held("db", "v1"))
	ctx, stop := context.WithCancel(context.Background())
	floor := c.watchFloor(ctx, lead.conn)
	start := time.Now()
	c.killAndWait(victim)
	c.waitMap("every partition back at 2 replicas on live nodes", fullyOn(2))
	took := time.Since(start)
	stop()
	if f := floor(); f < 1 {
		t.Errorf("a partition had %d replicas during re-replication: reads failed", f)
	}
	if took < after {
		t.Errorf("re-replicated after %v, before rereplicate_after %v", took, after)
	}
	fetched := 0
	for _, n := range c.nodes {
		if !n.killed {
			n.holder.mu.Lock()
			fetched += n.holder.fetched
			n.holder.mu.Unlock()
		}
	}
	if fetched != lost {
		t.Errorf("%d copies fetched, the dead node held %d", fetched, lost)
	}
	st := lead.coord.Status()
	if !st.Leading || st.Decision.Epoch < 1 || st.Decision.Leader != lead.addr {
		t.Errorf("leader's status = %+v", st)
	}
	t.Logf("back to full replication %v after the node died (rereplicate_after %v, %d copies of 50ms each)", took, after, lost)
}

// The leader dies while the nodes fetch what it assigned: the next
// leader finishes, and gives the old leader's copies away too.
func testLeaderKilled(t *testing.T, b backend) {
	c := newCluster(t, b, clusterOpts{strategy: placement.Sequins{}, replication: 3, rereplicateAfter: 500 * time.Millisecond, fetchDelay: 400 * time.Millisecond}, 5)
	lead := c.leader()
	victim := c.follower(lead)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var observer *node
	for _, n := range c.nodes {
		if n != lead && n != victim {
			observer = n
			break
		}
	}
	floor := c.watchFloor(ctx, observer.conn)
	c.killAndWait(victim)
	// Wait until the leader's assignment is in progress, then kill it.
	deadline := time.Now().Add(timeout)
	for {
		st := lead.coord.Status()
		if st.Decision.Epoch >= 1 && len(st.InProgress) > 0 {
			t.Logf("killing the leader with %d copies still to fetch", st.InProgress[0].Pending)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no re-replication in progress: %+v", st)
		}
		time.Sleep(5 * time.Millisecond)
	}
	first := lead.coord.Status().Decision
	c.kill(lead)
	next := c.leader()
	c.waitMap("every partition back at 3 replicas on the 3 live nodes", fullyOn(3))
	stop()
	if f := floor(); f < 1 {
		t.Errorf("a partition had %d replicas: reads failed", f)
	}
	deadline = time.Now().Add(timeout)
	for {
		st := next.coord.Status()
		if st.Decision.Epoch > first.Epoch && st.Decision.Leader == next.addr && len(st.InProgress) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the next leader's status = %+v (first decision %+v)", st, first)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// With the rendezvous strategy a node that joins takes a share, few other
// copies move, and replication never drops during the moves. How large a
// share is up to the scores of the nodes' addresses (ports differ from run
// to run): over 12 partitions a joiner may rank in the top two of only 2,
// so what is asserted is the least the bounded load guarantees it: the
// copies the old nodes cannot keep without going over MaxLoad.
// TestRebalanceOnJoinMovesFairShare checks the fair share over many
// partitions, where the scores even out.
func testRebalanceOnJoin(t *testing.T, b backend) {
	const r, nodes = 2, 4
	c := newCluster(t, b, clusterOpts{strategy: placement.Rendezvous{}, replication: r, rereplicateAfter: time.Second, fetchDelay: 20 * time.Millisecond}, nodes-1)
	lead := c.leader()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	floor := c.watchFloor(ctx, lead.conn)
	joiner := c.start(nil)
	ideal := float64(parts*r) / nodes
	least := parts*r - (nodes-1)*placement.MaxLoad(nodes, parts, r)
	m := c.waitMap("the joiner serving its share at full replication", func(m *topo.Map) bool {
		held := 0
		for p := 0; p < parts; p++ {
			if slices.Contains(m.Replicas("db", "v1", p), joiner.addr) {
				held++
			}
		}
		return held >= max(least, 1) && fullyOn(r)(m)
	})
	stop()
	if f := floor(); f < r {
		t.Errorf("a partition fell to %d replicas during the rebalance", f)
	}
	fetched := 0
	for _, n := range c.nodes {
		n.holder.mu.Lock()
		fetched += n.holder.fetched
		n.holder.mu.Unlock()
	}
	if float64(fetched) > math.Ceil(1.25*ideal) {
		t.Errorf("%d copies moved for a join, ideal %.1f", fetched, ideal)
	}
	t.Logf("join: %d copies moved (ideal %.1f); shards %v", fetched, ideal, shardsOf(m))
}

// follower returns a node of c other than lead.
func (c *cluster) follower(lead *node) *node {
	for _, n := range c.nodes {
		if n != lead {
			return n
		}
	}
	return nil
}
