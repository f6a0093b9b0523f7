package server

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"spangle/shared/placement"
	"spangle/shared/topo"
	"spangle/shared/topo/zktopo"
	"spangle/shared/zktest"
)

const zkCluster = "xds"

// registerNode opens a session of its own for addr at server, as a
// storaged in cluster mode does, and publishes the node and the
// partitions of versions the ring deals it (replication 2 over nodes).
func registerNode(ctx context.Context, t *testing.T, server, addr string, versions ...testVersion) *zktopo.Conn {
	t.Helper()
	c, err := zktopo.Open(zktopo.Options{Servers: []string{server}, Cluster: zkCluster, SessionTimeout: 4 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.RegisterNode(ctx, topo.Node{ID: addr, ShardID: addr, Addr: addr}); err != nil {
		t.Fatal(err)
	}
	for _, v := range versions {
		if _, err := c.PublishVersion(ctx, v.db, v.version, topo.VersionInfo{NumPartitions: v.n}); err != nil {
			t.Fatal(err)
		}
		for _, p := range placement.Assign(addr, nodes, v.n, 2) {
			if err := c.PublishPartition(ctx, v.db, v.version, p, addr); err != nil {
				t.Fatal(err)
			}
		}
	}
	return c
}

// mapTimes records when a Watcher's map first satisfies conditions.
type mapTimes struct {
	mu   sync.Mutex
	when map[string]time.Time // guarded by mu
}

// follow waits on w until ctx ends, stamping each named condition the
// first time a map satisfies it.
func (mt *mapTimes) follow(ctx context.Context, w topo.Watcher, conds map[string]func(*topo.Map) bool) {
	var rev uint64
	for {
		m, err := w.Wait(ctx, rev)
		if err != nil {
			return
		}
		now := time.Now()
		rev = m.Revision
		mt.mu.Lock()
		for name, ok := range conds {
			if _, seen := mt.when[name]; !seen && ok(m) {
				mt.when[name] = now
			}
		}
		mt.mu.Unlock()
	}
}

func (mt *mapTimes) get(name string) (time.Time, bool) {
	mt.mu.Lock()
	defer mt.mu.Unlock()
	t, ok := mt.when[name]
	return t, ok
}

// without reports whether m lists addr neither as a node nor as a
// replica.
func without(addr string) func(*topo.Map) bool {
	return func(m *topo.Map) bool {
		if _, ok := m.Nodes[addr]; ok {
			return false
		}
		for _, vs := range m.DBs {
			for _, v := range vs {
				for _, reps := range v.Replicas {
					for _, r := range reps {
						if r == addr {
							return false
						}
					}
				}
			}
		}
		return true
	}
}

// TestZooKeeperDiscovery: the xDS server follows a real ZooKeeper in which
// three nodes registered themselves, each in its own session, as storaged
// does. Two ADS clients (state of the world and delta, go-control-plane's
// generated clients) get every resource, valid, with every partition
// mapped to exactly its replicas in ZooKeeper. Then one node's session
// closes (a clean stop) and another's is cut off until ZooKeeper expires
// it (kill -9): each time, the push without the node reaches the clients
// within 1 s of the watcher's map losing it.
func TestZooKeeperDiscovery(t *testing.T) {
	zks := zktest.Start(t)
	ctx := waitCtx(t, 2*time.Minute)
	a1, b1 := testVersion{"a", "v1", 4}, testVersion{"b", "v1", 3}
	served := map[string]string{"a": "v1", "b": "v1"}

	// nodes[2] reaches ZooKeeper through a proxy, so that its session
	// can be cut off as a killed process's would be.
	proxy := zks.Proxy(t)
	regs := []*zktopo.Conn{
		registerNode(ctx, t, zks.Addr(), nodes[0], a1, b1),
		registerNode(ctx, t, zks.Addr(), nodes[1], a1, b1),
		registerNode(ctx, t, proxy.Addr(), nodes[2], a1, b1),
	}

	w, err := zktopo.OpenWatcher(zktopo.Options{Servers: []string{zks.Addr()}, Cluster: zkCluster, SessionTimeout: 4 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	mt := &mapTimes{when: map[string]time.Time{}}
	followCtx, stopFollow := context.WithCancel(ctx)
	defer stopFollow()
	go mt.follow(followCtx, w, map[string]func(*topo.Map) bool{
		"without1": without(nodes[1]),
		"without2": without(nodes[2]),
	})

	h := startServer(t, w, Options{})
	streamCtx, stopStreams := context.WithCancel(ctx)
	defer stopStreams()
	clients := map[string]*client{
		"sotw":  startSotW(streamCtx, t, h.conn, "envoy-sotw"),
		"delta": startDelta(streamCtx, t, h.conn, "envoy-delta"),
	}

	// Everything the three sessions published arrives.
	m1 := clusterMap(nodes, nil, a1, b1)
	for name, c := range clients {
		if _, err := c.waitFor(waitCtx(t, 60*time.Second), matches(m1, served)); err != nil {
			t.Fatalf("%s client, all nodes up: %v", name, err)
		}
	}

	// die ends a node's registration and checks that each client gets a
	// push without it within 1 s of the watcher's map losing it.
	die := func(what, cond string, dead map[string]bool, end func()) {
		t.Helper()
		want := clusterMap(nodes, dead, a1, b1)
		check := func(st *xdsState) error {
			for n := range dead {
				if holds(st, n) {
					return fmt.Errorf("dead node %s still listed", n)
				}
			}
			return matches(want, served)(st)
		}
		start := time.Now()
		end()
		// Wait on the clients together, so that each one's time is its own.
		var wg sync.WaitGroup
		got := map[string]time.Time{}
		errs := map[string]error{}
		var mu sync.Mutex
		for name, c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := c.waitFor(waitCtx(t, 60*time.Second), check)
				mu.Lock()
				got[name], errs[name] = time.Now(), err
				mu.Unlock()
			}()
		}
		wg.Wait()
		for name := range clients {
			if errs[name] != nil {
				t.Fatalf("%s client, after %s: %v", name, what, errs[name])
			}
			changed, ok := mt.get(cond)
			if !ok {
				t.Fatalf("%s client holds the map without the node before the watcher has it", name)
			}
			lag := got[name].Sub(changed)
			t.Logf("%s: ZooKeeper reported it %v after it happened; the %s client had the push %v later",
				what, changed.Sub(start).Round(time.Millisecond), name, lag.Round(100*time.Microsecond))
			if lag > time.Second {
				t.Errorf("%s client: push %v after the map change, want <= 1s", name, lag)
			}
		}
	}
	die("session of "+nodes[1]+" closed", "without1", map[string]bool{nodes[1]: true}, func() { regs[1].Close() })
	die("session of "+nodes[2]+" cut off until it expired", "without2", map[string]bool{nodes[1]: true, nodes[2]: true}, proxy.Cut)

	for name, c := range clients {
		if err := c.versionsIncrease(); err != nil {
			t.Errorf("%s client: %v", name, err)
		}
	}
	if err := ctx.Err(); errors.Is(err, context.DeadlineExceeded) {
		t.Fatal("test ran out of time")
	}
}
