package coordinator_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"spangle/shared/placement"
	"spangle/shared/topo"
)

// publishAll publishes db/version on the live nodes as the cluster's
// strategy deals it over their addresses, and returns who holds what.
func (c *cluster) publishAll(db, version string) map[*node][]int {
	c.t.Helper()
	var live []*node
	var addrs []string
	for _, n := range c.nodes {
		if !n.killed {
			live = append(live, n)
			addrs = append(addrs, n.addr)
		}
	}
	pl := c.o.strategy.Place(addrs, parts, c.o.replication, nil)
	ctx := context.Background()
	held := map[*node][]int{}
	for _, n := range live {
		if _, err := n.conn.PublishVersion(ctx, db, version, topo.VersionInfo{NumPartitions: parts}); err != nil {
			c.t.Fatal(err)
		}
		for p, hs := range pl {
			if slices.Contains(hs, n.addr) {
				if err := n.conn.PublishPartition(ctx, db, version, p, n.addr); err != nil {
					c.t.Fatal(err)
				}
				held[n] = append(held[n], p)
			}
		}
	}
	return held
}

// unpublish makes n stop serving partitions ps of db/version, as a node
// does once it deletes a version it no longer needs.
func (c *cluster) unpublish(n *node, db, version string, ps []int) {
	c.t.Helper()
	for _, p := range ps {
		if err := n.conn.UnpublishPartition(context.Background(), db, version, p, n.addr); err != nil {
			c.t.Fatal(err)
		}
	}
}

func complete(db, version string, r int) func(*topo.Map) bool {
	return func(m *topo.Map) bool { return m.Version(db, version).Complete(r) }
}

func unservedIn(m *topo.Map, db, version string) bool {
	v := m.Version(db, version)
	if v == nil {
		return false
	}
	for _, r := range v.Replicas {
		if len(r) > 0 {
			return false
		}
	}
	return true
}

// Once db/v2 is complete and every node has dropped db/v1, the leader
// deletes db/v1 after prune_after. A superseded version that one node
// still serves, and a db's newest version, are kept however long the
// leader looks.
func testPruneSuperseded(t *testing.T, b backend) {
	const after = 500 * time.Millisecond
	c := newCluster(t, b, clusterOpts{strategy: placement.Sequins{}, replication: 2, rereplicateAfter: time.Minute, pruneAfter: after}, 3)
	c.leader()
	c.publishAll("db", "v2")
	keptV1 := c.publishAll("kept", "v1")
	c.publishAll("kept", "v2")
	if _, err := c.nodes[0].conn.PublishVersion(context.Background(), "lone", "v1", topo.VersionInfo{NumPartitions: parts}); err != nil {
		t.Fatal(err)
	}
	c.waitMap("db/v2 and kept/v2 complete, lone/v1 there", func(m *topo.Map) bool {
		return complete("db", "v2", 2)(m) && complete("kept", "v2", 2)(m) && m.Version("lone", "v1") != nil
	})
	// kept/v1 loses every replica but one; db/v1 all of them.
	var keeper *node
	keep := -1
	for n, ps := range keptV1 {
		if keeper == nil {
			keeper, keep = n, ps[0]
			ps = ps[1:]
		}
		c.unpublish(n, "kept", "v1", ps)
	}
	for _, n := range c.nodes {
		c.unpublish(n, "db", "v1", n.holder.Held("db", "v1"))
	}
	dropped := time.Now()
	c.waitMap("db/v1 pruned", func(m *topo.Map) bool { return m.Version("db", "v1") == nil })
	took := time.Since(dropped)
	if took < after {
		t.Errorf("db/v1 pruned %v after its last replica went, before prune_after %v", took, after)
	}
	// The leader goes on looking, every 100ms, for four times prune_after.
	time.Sleep(4 * after)
	m := c.observer().conn.Map()
	if m.Version("db", "v1") != nil || !complete("db", "v2", 2)(m) {
		t.Errorf("db: v1 %v, v2 %v", m.Version("db", "v1"), m.Version("db", "v2"))
	}
	if v := m.Version("kept", "v1"); v == nil || !slices.Equal(v.Replicas[keep], []string{keeper.addr}) {
		t.Errorf("kept/v1, still served by %s, is %v", keeper.addr, v)
	}
	if v := m.Version("lone", "v1"); v == nil {
		t.Error("lone/v1, the newest (and only) version of lone, was pruned")
	}
	t.Logf("db/v1 pruned %v after its last replica went (prune_after %v)", took, after)
}

// While another leads, no node prunes, however long a version has been
// superseded and unserved; the node that takes over does, prune_after
// after it took over.
func testOnlyLeaderPrunes(t *testing.T, b backend) {
	const after = 200 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	// A leader that does nothing, elected before the nodes campaign.
	other := b.newConn(t)
	l, err := other.Campaign(ctx, "127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	c := newCluster(t, b, clusterOpts{strategy: placement.Sequins{}, replication: 2, rereplicateAfter: time.Minute, pruneAfter: after}, 3)
	c.publishAll("db", "v2")
	c.waitMap("db/v2 complete", complete("db", "v2", 2))
	for _, n := range c.nodes {
		c.unpublish(n, "db", "v1", n.holder.Held("db", "v1"))
	}
	c.waitMap("db/v1 unserved", func(m *topo.Map) bool { return unservedIn(m, "db", "v1") })
	time.Sleep(10 * after)
	for _, n := range c.nodes {
		if !unservedIn(n.conn.Map(), "db", "v1") {
			t.Fatalf("db/v1 gone from %s's map while every node follows", n.addr)
		}
		if st := n.coord.Status(); st.Leading || st.Leader != "127.0.0.1:1" {
			t.Fatalf("%s's status %+v while 127.0.0.1:1 leads", n.addr, st)
		}
	}
	resigned := time.Now()
	if err := l.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	lead := c.leader()
	c.waitMap("db/v1 pruned by the new leader", func(m *topo.Map) bool { return m.Version("db", "v1") == nil })
	if took := time.Since(resigned); took < after {
		t.Errorf("db/v1 pruned %v after the new leader took over, before prune_after %v", took, after)
	}
	t.Logf("%s took over and pruned db/v1 %v after the old leader resigned", lead.addr, time.Since(resigned))
}
