package coordinator_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"spangle/shared/dbver"
	"spangle/shared/placement"
	"spangle/shared/topo"
	"spangle/storaged/coordinator"
)

// timeout bounds every wait: generous, since other tests load the machine.
const timeout = 60 * time.Second

// coordConn is a node's session: it publishes and coordinates.
type coordConn interface {
	topo.Conn
	topo.Coordination
}

// backend opens sessions with a coordination service for the scenarios.
type backend struct {
	newConn func(t *testing.T) coordConn
}

// memHolder is a node's local store in these tests: a set of partitions
// that take delay to fetch, and only from a peer that serves them.
type memHolder struct {
	delay time.Duration

	mu      sync.Mutex
	held    map[string][]int // guarded by mu; by db/version
	fetched int              // guarded by mu
}

func (h *memHolder) Held(db, version string) []int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]int(nil), h.held[db+"/"+version]...)
}

func (h *memHolder) Fetch(ctx context.Context, part dbver.Partition, peers []string) error {
	if len(peers) == 0 {
		return fmt.Errorf("no peer serves %s", part)
	}
	select {
	case <-time.After(h.delay):
	case <-ctx.Done():
		return ctx.Err()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	k, p := part.Of().String(), part.P
	if !slices.Contains(h.held[k], p) {
		h.held[k] = append(h.held[k], p)
		h.fetched++
	}
	return nil
}

func (h *memHolder) Drop(_ context.Context, p dbver.Partition) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	k := p.Of().String()
	h.held[k] = slices.DeleteFunc(h.held[k], func(x int) bool { return x == p.P })
	return nil
}

// node is one storaged's coordination part: its session, an ELECT
// server on a real socket, a Coordinator and a Follower.
type node struct {
	addr   string
	conn   coordConn
	coord  *coordinator.Coordinator
	holder *memHolder
	srv    *httptest.Server
	cancel context.CancelFunc
	done   sync.WaitGroup
	killed bool
}

type clusterOpts struct {
	strategy         placement.Strategy
	replication      int
	rereplicateAfter time.Duration
	pruneAfter       time.Duration // 0: the default, beyond any test
	fetchDelay       time.Duration
}

type cluster struct {
	t     *testing.T
	b     backend
	o     clusterOpts
	nodes []*node
}

// start starts a node; it holds what held lists of db/v1 and publishes it.
func (c *cluster) start(held []int) *node {
	t := c.t
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	addr := srv.Listener.Addr().String()
	n := &node{addr: addr, conn: c.b.newConn(t), srv: srv,
		holder: &memHolder{delay: c.o.fetchDelay, held: map[string][]int{"db/v1": held}}}
	self := topo.Node{ID: addr, Addr: addr}
	log := zaptest.NewLogger(t).Named(addr)
	var err error
	n.coord, err = coordinator.New(coordinator.Options{
		Conn: n.conn, Coord: n.conn, Self: self, Strategy: c.o.strategy,
		Replication: c.o.replication, RereplicateAfter: c.o.rereplicateAfter, PruneAfter: c.o.pruneAfter,
		Interval: 100 * time.Millisecond, Log: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	mux.Handle(coordinator.ElectPrefix, n.coord)
	f, err := coordinator.NewFollower(coordinator.FollowerOptions{
		Conn: n.conn, Coord: n.conn, Self: self, Holder: n.holder, Interval: 100 * time.Millisecond, Concurrency: 1, Log: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := n.conn.RegisterNode(ctx, self); err != nil {
		t.Fatal(err)
	}
	if len(held) > 0 {
		if _, err := n.conn.PublishVersion(ctx, "db", "v1", topo.VersionInfo{NumPartitions: parts}); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range held {
		if err := n.conn.PublishPartition(ctx, "db", "v1", p, addr); err != nil {
			t.Fatal(err)
		}
	}
	rctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	n.done.Add(2)
	go func() { defer n.done.Done(); n.coord.Run(rctx) }()
	go func() { defer n.done.Done(); f.Run(rctx) }()
	c.nodes = append(c.nodes, n)
	t.Cleanup(func() { c.kill(n) })
	return n
}

// kill stops a node for good: its session ends, its ephemeral entries
// with it.
func (c *cluster) kill(n *node) {
	if n.killed {
		return
	}
	n.killed = true
	n.cancel()
	n.done.Wait()
	n.srv.Close()
	n.conn.Close()
}

// killAndWait kills n and waits until a live node's map has lost it.
func (c *cluster) killAndWait(n *node) {
	c.kill(n)
	c.waitMap("the killed node gone from the map", func(m *topo.Map) bool {
		if _, ok := m.Nodes[n.addr]; ok {
			return false
		}
		v := m.Version("db", "v1")
		for _, reps := range v.Replicas {
			if slices.Contains(reps, n.addr) {
				return false
			}
		}
		return true
	})
}

const parts = 12

// newCluster starts n nodes holding db/v1 as the sequins ring deals it
// over their addresses.
func newCluster(t *testing.T, b backend, o clusterOpts, n int) *cluster {
	c := &cluster{t: t, b: b, o: o}
	// Addresses are known only once the servers listen: start the nodes
	// empty of data first, then give each its ring share.
	for i := 0; i < n; i++ {
		c.start(nil)
	}
	var addrs []string
	for _, nd := range c.nodes {
		addrs = append(addrs, nd.addr)
	}
	pl := o.strategy.Place(addrs, parts, o.replication, nil)
	ctx := context.Background()
	for _, nd := range c.nodes {
		var held []int
		for p, hs := range pl {
			if slices.Contains(hs, nd.addr) {
				held = append(held, p)
			}
		}
		nd.holder.mu.Lock()
		nd.holder.held["db/v1"] = slices.Clone(held)
		nd.holder.mu.Unlock()
		if _, err := nd.conn.PublishVersion(ctx, "db", "v1", topo.VersionInfo{NumPartitions: parts}); err != nil {
			t.Fatal(err)
		}
		for _, p := range held {
			if err := nd.conn.PublishPartition(ctx, "db", "v1", p, nd.addr); err != nil {
				t.Fatal(err)
			}
		}
	}
	c.waitMap("every partition at full replication", func(m *topo.Map) bool { return minReplicas(m) == o.replication })
	return c
}

func minReplicas(m *topo.Map) int {
	v := m.Version("db", "v1")
	if v == nil || len(v.Replicas) != parts {
		return 0
	}
	lo := 1 << 30
	for _, r := range v.Replicas {
		lo = min(lo, len(r))
	}
	return lo
}

// observer returns the map view of a live node.
func (c *cluster) observer() *node {
	for _, n := range c.nodes {
		if !n.killed {
			return n
		}
	}
	c.t.Fatal("no live node")
	return nil
}

func (c *cluster) waitMap(what string, ok func(*topo.Map) bool) *topo.Map {
	c.t.Helper()
	return c.waitMapOf(nil, what, ok)
}

// waitMapOf waits until ok holds for w's map, or a live node's if w is nil.
func (c *cluster) waitMapOf(w topo.Watcher, what string, ok func(*topo.Map) bool) *topo.Map {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	fixed := w
	for {
		w := fixed
		if w == nil {
			w = c.observer().conn
		}
		m := w.Map()
		if ok(m) {
			return m
		}
		wctx, wcancel := context.WithTimeout(ctx, 200*time.Millisecond)
		_, err := w.Wait(wctx, m.Revision)
		wcancel()
		if ctx.Err() != nil {
			c.t.Fatalf("waiting for %s: %v; replicas %v", what, err, m.Version("db", "v1"))
		}
	}
}

// leader waits until some live node leads and returns it.
func (c *cluster) leader() *node {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		for _, n := range c.nodes {
			if !n.killed && n.coord.Status().Leading {
				return n
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.t.Fatal("no leader")
	return nil
}

// watchFloor records the fewest replicas any partition had while it
// runs: reads fail only when a partition has none.
func (c *cluster) watchFloor(ctx context.Context, w topo.Watcher) func() int {
	var (
		mu    sync.Mutex
		floor = 1 << 30
		worst *topo.Map
		done  = make(chan struct{})
	)
	// Start from a map that has caught up with the cluster.
	m := c.waitMapOf(w, "the observer's map at full replication", func(m *topo.Map) bool { return minReplicas(m) == c.o.replication })
	go func() {
		defer close(done)
		for {
			mu.Lock()
			if f := minReplicas(m); f < floor && m.Version("db", "v1") != nil {
				floor, worst = f, m
			}
			mu.Unlock()
			next, err := w.Wait(ctx, m.Revision)
			if err != nil {
				return
			}
			m = next
		}
	}()
	return func() int {
		<-done
		mu.Lock()
		defer mu.Unlock()
		if worst != nil && floor < c.o.replication {
			c.t.Logf("fewest replicas %d, in map rev %d: %v, nodes %d", floor, worst.Revision, worst.Version("db", "v1"), len(worst.Nodes))
		}
		return floor
	}
}

func shardsOf(m *topo.Map) []string {
	ids := m.ShardIDs()
	sort.Strings(ids)
	return ids
}

// fullyOn reports whether every partition has exactly r replicas, all on
// live nodes of m.
func fullyOn(r int) func(*topo.Map) bool {
	return func(m *topo.Map) bool {
		v := m.Version("db", "v1")
		if v == nil {
			return false
		}
		for _, reps := range v.Replicas {
			if len(reps) != r {
				return false
			}
			for _, a := range reps {
				if _, ok := m.Nodes[a]; !ok {
					return false
				}
			}
		}
		return true
	}
}
