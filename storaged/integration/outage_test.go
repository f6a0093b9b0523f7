package integration

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"spangle/shared/placement"
	"spangle/shared/topo"
	"spangle/shared/wire"
)

// outage is how long ZooKeeper stays away.
const outage = 20 * time.Second

// readLoop reads every key from its holders until ctx ends, counting
// answers that are not 200 with the value of the version the node names.
type readLoop struct {
	ok, failed atomic.Int64
	mu         sync.Mutex
	firstFail  string // guarded by mu
}

func (r *readLoop) run(ctx context.Context, nodes []*node) {
	byAddr := map[string]*node{}
	for _, n := range nodes {
		byAddr[n.addr] = n
	}
	holders := placement.Holders(addrs(nodes...), testParts, testRepl)
	for round := 0; ctx.Err() == nil; round++ {
		for i := 0; i < testKeys && ctx.Err() == nil; i += 7 {
			hs := holders[partitionOf(i)]
			n := byAddr[hs[(i+round)%len(hs)]]
			code, body, ver, err := n.get(testDB, keyOf(i))
			if err == nil && code == 200 && body == valueOf(i, ver) {
				r.ok.Add(1)
				continue
			}
			r.failed.Add(1)
			r.mu.Lock()
			if r.firstFail == "" {
				r.firstFail = n.addr + " " + keyOf(i) + ": " + body
				if err != nil {
					r.firstFail += err.Error()
				}
			}
			r.mu.Unlock()
		}
	}
}

// TestZooKeeperOutage: ZooKeeper goes away for 20 s during a read loop.
// No read fails, a version added meanwhile is not adopted while it is
// away, and once it is back the nodes re-register by themselves (same
// processes) and the new version becomes ACTIVE everywhere.
func TestZooKeeperOutage(t *testing.T) {
	zks, root, nodes := startCluster(t)
	pids := map[*node]int{}
	for _, n := range nodes {
		pids[n] = n.PID()
	}
	ctx, cancel := context.WithCancel(context.Background())
	var reads readLoop
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() { defer wg.Done(); reads.run(ctx, nodes) }()
	}
	stopReads := func() { cancel(); wg.Wait() }
	defer stopReads()

	zks.Stop()
	stopped := time.Now()
	writeVersion(t, root, "v2")
	for _, n := range nodes {
		n.refresh()
	}
	for time.Since(stopped) < outage {
		for _, n := range nodes {
			if s := n.state(testDB, "v2"); s == wire.StateActive {
				t.Fatalf("%s adopted v2 while ZooKeeper was away", n.addr)
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	for _, n := range nodes {
		if s := n.state(testDB, "v1"); s != wire.StateActive {
			t.Fatalf("%s: v1 is %q during the outage, want ACTIVE", n.addr, s)
		}
	}
	zks.Restart()
	restarted := time.Now()

	waitActive(t, zkDeadline, testDB, "v2", nodes...)
	t.Logf("v2 ACTIVE on all nodes %v after ZooKeeper came back", time.Since(restarted).Round(10*time.Millisecond))
	want := []string{}
	for _, a := range addrs(nodes...) {
		want = append(want, topo.NodeName(a, a))
	}
	waitFor(t, zkDeadline, "every node registered again", func() bool {
		got := zkChildren(t, zks.Addr(), testPaths.Nodes())
		return len(got) == len(want) && got[0] == want[0] && got[1] == want[1] && got[2] == want[2]
	})
	for _, n := range nodes {
		if !n.Running() || n.PID() != pids[n] {
			t.Fatalf("%s was restarted", n.addr)
		}
		if got, want := len(replicaEntries(t, zks.Addr(), "v2", n.addr)), len(placement.Assign(n.addr, addrs(nodes...), testParts, testRepl)); got != want {
			t.Errorf("%s has %d v2 replica znodes, want %d", n.addr, got, want)
		}
	}
	// v1, replaced, leaves ZooKeeper once its retention is over (its
	// replica znodes go before its data).
	waitFor(t, zkDeadline, "v1's replica znodes removed after its retention", func() bool {
		return len(zkChildren(t, zks.Addr(), testPaths.Version(testDB, "v1"))) == 0
	})
	stopReads()
	if f := reads.failed.Load(); f != 0 || reads.ok.Load() == 0 {
		t.Fatalf("reads: %d ok, %d failed (first: %s)", reads.ok.Load(), f, reads.firstFail)
	}
	t.Logf("reads during the outage and switch: %d ok, 0 failed", reads.ok.Load())
}
