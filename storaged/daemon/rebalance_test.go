package daemon

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"spangle/shared/placement"
	"spangle/shared/seqfile"
	"spangle/shared/topo/memtopo"
	"spangle/storaged/config"
	"spangle/storaged/internal/testutil"
)

// TestRebalanceOnJoinInProcess: with the rendezvous strategy, a fourth
// node joining a three-node cluster gets its share of the served
// version; the others hand over only what it takes, and every key stays
// readable through the replicas the map names.
func TestRebalanceOnJoinInProcess(t *testing.T) {
	const parts, repl = 12, 2
	root := t.TempDir()
	srv := memtopo.NewServer()
	start := func() *Daemon {
		d, _ := startMemNode(t, srv, root, func(cfg *config.Config) { cfg.Sharding.Assignment = "rendezvous" })
		return d
	}
	ds := []*Daemon{start(), start(), start()}
	watch := srv.Watcher()
	defer watch.Close()
	waitFor(t, "three registered nodes", func() bool { return len(watch.Map().Nodes) == 3 })
	recs := testutil.Records(600, "v1")
	testutil.WriteVersion(t, root, "db", "v1", parts, testutil.Sharded, seqfile.WriterOptions{}, recs)
	for _, d := range ds {
		d.Refresh()
	}
	for _, d := range ds {
		waitFor(t, d.Addr+" active", func() bool { return d.Versions.CurrentVersion("db") == "v1" })
	}
	before := map[string][]int{}
	var shards []string
	for _, d := range ds {
		before[d.Addr] = d.Versions.Views().HeldPartitions("db", "v1")
		shards = append(shards, d.Addr)
	}
	// The first deal is rendezvous's, not the sequins ring's.
	pl := placement.Rendezvous{}.Place(shards, parts, repl, nil)
	for _, d := range ds {
		var want []int
		for p, hs := range pl {
			if slices.Contains(hs, d.Addr) {
				want = append(want, p)
			}
		}
		if !slices.Equal(before[d.Addr], want) {
			t.Errorf("%s holds %v, rendezvous deals it %v", d.Addr, before[d.Addr], want)
		}
	}

	stop := make(chan struct{})
	done := make(chan [2]int)
	go func() { done <- readLoopN(watch, recs, parts, stop) }()
	joiner := start()
	joiner.Refresh()
	// gained lists the partitions an old node holds that it did not hold
	// before the join. Under the bounded-load cap a round of the leader
	// may hand an old node a copy for a moment (when the joiner loaded
	// the plain ring's share before the assignment reached it); the
	// placement the cluster settles on must give the old nodes nothing.
	gained := func() []string {
		var g []string
		for _, d := range ds {
			for _, p := range d.Versions.Views().HeldPartitions("db", "v1") {
				if !slices.Contains(before[d.Addr], p) {
					g = append(g, fmt.Sprintf("%s gained partition %d in a join", d.Addr, p))
				}
			}
		}
		return g
	}
	settled := func() bool {
		m := watch.Map()
		v := m.Version("db", "v1")
		if v == nil {
			return false
		}
		load := map[string]int{}
		for _, r := range v.Replicas {
			if len(r) != repl {
				return false
			}
			for _, a := range r {
				load[a]++
			}
		}
		// Every node within the bounded-load cap, the joiner holding
		// some: how many depends on whether it loaded the plain ring's
		// share before the leader's assignment reached it.
		for _, l := range load {
			if l > placement.MaxLoad(4, parts, repl) {
				return false
			}
		}
		mine := load[joiner.Addr]
		return mine > 0 && len(joiner.Versions.Views().HeldPartitions("db", "v1")) == mine && len(gained()) == 0
	}
	for deadline := time.Now().Add(30 * time.Second); !settled(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the joiner %s holds %v; replicas %v; %q", joiner.Addr, joiner.Versions.Views().HeldPartitions("db", "v1"), watch.Map().Version("db", "v1").Replicas, gained())
		}
	}
	close(stop)
	res := <-done
	if res[0] == 0 || res[1] > 0 {
		t.Errorf("%d of %d reads failed during the rebalance", res[1], res[0])
	}
	t.Logf("joiner holds %v; %d reads during the rebalance, none failed", joiner.Versions.Views().HeldPartitions("db", "v1"), res[0])
}
