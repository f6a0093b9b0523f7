package membership

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"spangle/shared/dbver"
	"spangle/shared/placement"
	"spangle/shared/topo/memtopo"
)

// gainer is a member's Run host when testOpts.gain is set: it activates
// as activations does and takes a partition at once, publishing it as
// the version manager's replica set does.
type gainer struct {
	m      *member
	mu     sync.Mutex
	gained []dbver.Partition
}

func (g *gainer) Activate(db, version string) error { return g.m.act.Activate(db, version) }

func (g *gainer) Gain(_ context.Context, p dbver.Partition, _ []string) error {
	g.mu.Lock()
	g.gained = append(g.gained, p)
	g.mu.Unlock()
	g.m.c.Hooks().PartitionReady(p.DB, p.Version, p.P, 8)
	return nil
}

func (g *gainer) list() []dbver.Partition {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.gained)
}

// A node leaves (its registration goes when its session expires) while
// the others decide a version: two decide with it in the node list, the
// third without, and a partition falls to no live node. Once the list is
// stable again, the first two decide again and take what the list of
// three gives them, so the version becomes complete and is served.
func TestNodeLeavingWhileDecidingOrphansNoPartition(t *testing.T) {
	srv := memtopo.NewServer()
	o := testOpts{gain: true}
	ms := startThree(t, srv, o)
	leaving := join(t, srv, "10.0.0.4:1", o)
	for _, m := range append(ms, leaving) {
		waitUntil(t, m.addr+" to see four nodes", func() bool { return len(m.conn.Map().Nodes) == 4 })
	}
	four := append(shardsOf(ms), leaving.addr)
	held := make([][]int, 3)
	held[0], held[1] = ms[0].held(t, "db", "v1", 8), ms[1].held(t, "db", "v1", 8)
	for i := range 2 {
		if want := placement.Assign(ms[i].addr, four, 8, 2); !slices.Equal(held[i], want) {
			t.Fatalf("%s decided %v; the list of four gives %v", ms[i].addr, held[i], want)
		}
	}
	leaving.stop()
	waitUntil(t, "the third node to see the node gone", func() bool { return len(ms[2].conn.Map().Nodes) == 3 })
	held[2] = ms[2].held(t, "db", "v1", 8)
	if want := placement.Assign(ms[2].addr, shardsOf(ms), 8, 2); !slices.Equal(held[2], want) {
		t.Fatalf("%s decided %v; the list of three gives %v", ms[2].addr, held[2], want)
	}
	// The hazard is real for this layout: some partition has no holder.
	var orphans []int
	for p := range 8 {
		if !slices.Contains(held[0], p) && !slices.Contains(held[1], p) && !slices.Contains(held[2], p) {
			orphans = append(orphans, p)
		}
	}
	if len(orphans) == 0 {
		t.Fatalf("no partition orphaned by %v: the test does not set up the hazard", held)
	}
	for i, m := range ms {
		m.ready("db", "v1", held[i], 8)
	}
	for _, m := range ms {
		waitUntil(t, fmt.Sprintf("%s to activate v1 (partitions %v had no holder)", m.addr, orphans), func() bool { return m.act.active("db", "v1") })
	}
	v := ms[0].conn.Map().Version("db", "v1")
	for _, p := range orphans {
		if len(v.Replicas[p]) == 0 {
			t.Errorf("partition %d has no replica in the map", p)
		}
	}
	// The node that decided under the final list had nothing to take.
	if g := ms[2].gains.list(); len(g) != 0 {
		t.Errorf("%s took %v though it decided under the final list", ms[2].addr, g)
	}
	// And nothing was taken twice, nor a partition already held.
	for i := range 2 {
		g := ms[i].gains.list()
		for _, p := range g {
			if slices.Contains(held[i], p.P) {
				t.Errorf("%s took partition %d it already held", ms[i].addr, p.P)
			}
		}
	}
}
