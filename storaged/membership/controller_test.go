package membership

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"spangle/shared/placement"
	"spangle/shared/topo"
	"spangle/shared/topo/memtopo"
	"spangle/storaged/versions"
)

// activations records Activate calls, standing in for the version
// manager, which holds every version it is asked about.
type activations struct {
	mu   sync.Mutex
	done map[string]bool // "db/version"
	gone map[string]bool // versions the manager no longer holds
}

func (a *activations) Activate(db, version string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.gone[db+"/"+version] {
		return fmt.Errorf("test: %w", versions.ErrVersionNotHeld)
	}
	if a.done == nil {
		a.done = map[string]bool{}
	}
	a.done[db+"/"+version] = true
	return nil
}

func (a *activations) active(db, version string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.done[db+"/"+version]
}

// member is one controller on the in-memory service.
type member struct {
	c     *Controller
	conn  *memtopo.Conn
	act   *activations
	gains *gainer // nil unless testOpts.gain
	addr  string
	stop  func()
}

type testOpts struct {
	shardID        string
	minRepl        int
	maxRepl        int
	timeToConverge time.Duration
	gain           bool // Run gets a Gainer (gainer), as storaged's is
}

func join(t *testing.T, srv *memtopo.Server, addr string, o testOpts) *member {
	t.Helper()
	conn := srv.Conn()
	if o.shardID == "" {
		o.shardID = addr
	}
	if o.timeToConverge == 0 {
		o.timeToConverge = 200 * time.Millisecond
	}
	c, err := New(Options{
		Conn: conn, Coord: conn, Node: topo.Node{ID: "id-" + addr, ShardID: o.shardID, Addr: addr},
		MinReplication: o.minRepl, MaxReplication: o.maxRepl, TimeToConverge: o.timeToConverge,
		PollInterval: 10 * time.Millisecond, Log: zaptest.NewLogger(t).Named(addr),
	})
	if err != nil {
		t.Fatal(err)
	}
	m := &member{c: c, conn: conn, act: &activations{}, addr: addr}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var act Activator = m.act
	if o.gain {
		m.gains = &gainer{m: m}
		act = m.gains
	}
	go func() { done <- c.Run(ctx, act) }()
	var once sync.Once
	m.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("%s: Run: %v", addr, err)
			}
			conn.Close()
		})
	}
	t.Cleanup(m.stop)
	return m
}

// held calls the Held hook with a generous deadline.
func (m *member) held(t *testing.T, db, version string, n int) []int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	held, err := m.c.Hooks().Held(ctx, db, version, n)
	if err != nil {
		t.Fatalf("%s: Held(%s/%s): %v", m.addr, db, version, err)
	}
	return held
}

// ready publishes every partition of held as loaded.
func (m *member) ready(db, version string, held []int, n int) {
	for _, p := range held {
		m.c.Hooks().PartitionReady(db, version, p, n)
	}
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// startThree starts three members and waits until each sees all three.
func startThree(t *testing.T, srv *memtopo.Server, o testOpts) []*member {
	ms := []*member{join(t, srv, "10.0.0.1:1", o), join(t, srv, "10.0.0.2:1", o), join(t, srv, "10.0.0.3:1", o)}
	for _, m := range ms {
		waitUntil(t, m.addr+" to see every node", func() bool { return len(m.conn.Map().Nodes) == 3 })
	}
	return ms
}

func shardsOf(ms []*member) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.c.opts.Node.ShardID)
	}
	return out
}

func TestAssignmentFollowsTheRing(t *testing.T) {
	srv := memtopo.NewServer()
	ms := startThree(t, srv, testOpts{})
	copies := make([]int, 8)
	for _, m := range ms {
		got := m.held(t, "db", "v1", 8)
		want := placement.Assign(m.addr, shardsOf(ms), 8, 2)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s holds %v, ring says %v", m.addr, got, want)
		}
		for _, p := range got {
			copies[p]++
		}
	}
	for p, c := range copies {
		if c != 2 {
			t.Errorf("partition %d has %d holders, want 2", p, c)
		}
	}
	if info := ms[0].conn.Map().Version("db", "v1"); info == nil || info.NumPartitions != 8 {
		t.Fatalf("partitions/db/v1 not published with its count: %+v", info)
	}
}

func TestDecisionWaitsForAStableNodeList(t *testing.T) {
	srv := memtopo.NewServer()
	const ttc = 400 * time.Millisecond
	a := join(t, srv, "10.0.0.1:1", testOpts{timeToConverge: ttc})
	start := time.Now()
	got := make(chan []int, 1)
	go func() { got <- a.held(t, "db", "v1", 8) }()
	// A second node arrives before the first has converged: the first
	// must count it.
	time.Sleep(ttc / 4)
	b := join(t, srv, "10.0.0.2:1", testOpts{timeToConverge: ttc})
	held := <-got
	if waited := time.Since(start); waited < ttc+ttc/4 {
		t.Errorf("decided after %v, before the node list was stable for %v", waited, ttc)
	}
	if want := placement.Assign(a.addr, []string{a.addr, b.addr}, 8, 2); !reflect.DeepEqual(held, want) {
		t.Errorf("decided %v without the second node; want %v", held, want)
	}
}

func TestSharedShardIDsHoldTheSame(t *testing.T) {
	srv := memtopo.NewServer()
	a1 := join(t, srv, "10.0.0.1:1", testOpts{shardID: "a"})
	a2 := join(t, srv, "10.0.0.2:1", testOpts{shardID: "a"})
	b := join(t, srv, "10.0.0.3:1", testOpts{shardID: "b"})
	h1, h2, hb := a1.held(t, "db", "v1", 8), a2.held(t, "db", "v1", 8), b.held(t, "db", "v1", 8)
	if !reflect.DeepEqual(h1, h2) {
		t.Fatalf("nodes sharing shard id a hold %v and %v", h1, h2)
	}
	if want := placement.Assign("a", []string{"a", "b"}, 8, 2); !reflect.DeepEqual(h1, want) {
		t.Fatalf("shard a holds %v, want %v", h1, want)
	}
	if want := placement.Assign("b", []string{"a", "b"}, 8, 2); !reflect.DeepEqual(hb, want) {
		t.Fatalf("shard b holds %v, want %v", hb, want)
	}
}

func TestActivationWaitsForMinReplication(t *testing.T) {
	srv := memtopo.NewServer()
	ms := startThree(t, srv, testOpts{minRepl: 2})
	held := make([][]int, 3)
	for i, m := range ms {
		held[i] = m.held(t, "db", "v1", 8)
	}
	ms[0].ready("db", "v1", held[0], 8)
	ms[1].ready("db", "v1", held[1], 8)
	// Partitions that ring gave node 3 have one replica: not complete.
	waitUntil(t, "both publications in the map", func() bool {
		n := 0
		for _, r := range ms[2].conn.Map().Version("db", "v1").Replicas {
			n += len(r)
		}
		return n == len(held[0])+len(held[1])
	})
	time.Sleep(100 * time.Millisecond) // several controller rounds
	for _, m := range ms {
		if m.act.active("db", "v1") {
			t.Fatalf("%s activated v1 with partitions under min_replication", m.addr)
		}
	}
	ms[2].ready("db", "v1", held[2], 8)
	for _, m := range ms {
		waitUntil(t, m.addr+" to activate v1", func() bool { return m.act.active("db", "v1") })
	}
}

func TestActivationIsIndependentOfOwnPartitions(t *testing.T) {
	srv := memtopo.NewServer()
	ms := startThree(t, srv, testOpts{})
	held := make([][]int, 3)
	for i, m := range ms {
		held[i] = m.held(t, "db", "v1", 8)
	}
	// Nodes 1 and 2 cover every partition once; node 3 has loaded nothing
	// yet, and still switches clients to v1.
	ms[0].ready("db", "v1", held[0], 8)
	ms[1].ready("db", "v1", held[1], 8)
	waitUntil(t, "node 3 to activate v1 before loading its partitions", func() bool { return ms[2].act.active("db", "v1") })

	// A node joining late activates a complete version at once.
	late := join(t, srv, "10.0.0.9:1", testOpts{})
	late.held(t, "db", "v1", 8)
	waitUntil(t, "the late node to activate v1", func() bool { return late.act.active("db", "v1") })
}

func TestMaxReplicationSkipsFullPartitions(t *testing.T) {
	srv := memtopo.NewServer()
	ms := startThree(t, srv, testOpts{maxRepl: 2})
	for _, m := range ms {
		m.ready("db", "v1", m.held(t, "db", "v1", 8), 8)
	}
	waitUntil(t, "v1 complete", func() bool { return ms[0].act.active("db", "v1") })
	// Free one replica of a partition the ring deals the newcomer.
	newAddr := "10.0.0.4:1"
	ring := placement.Assign(newAddr, append(shardsOf(ms), newAddr), 8, 2)
	if len(ring) == 0 {
		t.Fatal("the ring deals the newcomer nothing")
	}
	freed := ring[0]
	holder := ms[0].conn.Map().Replicas("db", "v1", freed)[0]
	for _, m := range ms {
		if m.addr == holder {
			m.c.Hooks().BeforeRemove("db", "v1", []int{freed})
		}
	}
	waitUntil(t, "the freed replica gone from the map", func() bool { return len(ms[0].conn.Map().Replicas("db", "v1", freed)) == 1 })
	late := join(t, srv, newAddr, testOpts{maxRepl: 2})
	waitUntil(t, "the newcomer to see the freed replica", func() bool {
		return late.conn.Map().Version("db", "v1") != nil && len(late.conn.Map().Replicas("db", "v1", freed)) == 1
	})
	if got := late.held(t, "db", "v1", 8); !reflect.DeepEqual(got, []int{freed}) {
		t.Fatalf("newcomer holds %v; the ring gave it %v of which only %d is under max_replication", got, ring, freed)
	}
}

func TestOutageAdoptsNothingAndCatchesUp(t *testing.T) {
	srv := memtopo.NewServer()
	ms := startThree(t, srv, testOpts{})
	for _, m := range ms {
		m.ready("db", "v1", m.held(t, "db", "v1", 8), 8)
	}
	for _, m := range ms {
		waitUntil(t, "v1 active", func() bool { return m.act.active("db", "v1") })
	}
	srv.SetDown(true)
	waitUntil(t, "controllers to notice the outage", func() bool {
		for _, m := range ms {
			if m.c.Converged() {
				return false
			}
		}
		return true
	})
	type result struct {
		held []int
		err  error
	}
	results := make([]chan result, 3)
	for i, m := range ms {
		results[i] = make(chan result, 1)
		go func() {
			h, err := m.c.Hooks().Held(context.Background(), "db", "v2", 8)
			results[i] <- result{h, err}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	for i, m := range ms {
		select {
		case r := <-results[i]:
			t.Fatalf("%s decided v2 (%v, %v) while the service was down", m.addr, r.held, r.err)
		default:
		}
	}
	srv.SetDown(false)
	for i, m := range ms {
		r := <-results[i]
		if r.err != nil {
			t.Fatal(r.err)
		}
		if want := placement.Assign(m.addr, shardsOf(ms), 8, 2); !reflect.DeepEqual(r.held, want) {
			t.Fatalf("%s holds %v of v2, want %v", m.addr, r.held, want)
		}
		m.ready("db", "v2", r.held, 8)
	}
	for _, m := range ms {
		waitUntil(t, m.addr+" to activate v2 after the outage", func() bool { return m.act.active("db", "v2") })
	}
}

func TestSessionExpiryRepublishes(t *testing.T) {
	srv := memtopo.NewServer()
	ms := startThree(t, srv, testOpts{})
	for _, m := range ms {
		m.ready("db", "v1", m.held(t, "db", "v1", 8), 8)
	}
	victim := ms[2]
	srv.Isolate(victim.conn, true)
	srv.Expire(victim.conn)
	waitUntil(t, "the expired node gone from a peer's map", func() bool {
		_, ok := ms[0].conn.Map().Nodes[victim.addr]
		return !ok
	})
	for p, r := range ms[0].conn.Map().Version("db", "v1").Replicas {
		for _, a := range r {
			if a == victim.addr {
				t.Fatalf("partition %d still lists the expired node", p)
			}
		}
	}
	srv.Isolate(victim.conn, false)
	waitUntil(t, "the node and its partitions back in a peer's map", func() bool {
		m := ms[0].conn.Map()
		if _, ok := m.Nodes[victim.addr]; !ok {
			return false
		}
		n := 0
		for _, r := range m.Version("db", "v1").Replicas {
			n += len(r)
		}
		return n == 16
	})
	// And the node decides new versions again.
	if got := victim.held(t, "db", "v2", 8); !reflect.DeepEqual(got, placement.Assign(victim.addr, shardsOf(ms), 8, 2)) {
		t.Fatalf("after expiry the node holds %v of v2", got)
	}
}

func TestRemoveUnpublishesAndForgets(t *testing.T) {
	srv := memtopo.NewServer()
	ms := startThree(t, srv, testOpts{})
	held := ms[0].held(t, "db", "v1", 8)
	ms[0].ready("db", "v1", held, 8)
	waitUntil(t, "published", func() bool { return len(ms[1].conn.Map().Replicas("db", "v1", held[0])) == 1 })
	ms[0].c.Hooks().BeforeRemove("db", "v1", held)
	waitUntil(t, "unpublished", func() bool {
		for _, r := range ms[1].conn.Map().Version("db", "v1").Replicas {
			if len(r) != 0 {
				return false
			}
		}
		return true
	})
}

func TestPartitionCountMismatchFails(t *testing.T) {
	srv := memtopo.NewServer()
	ms := startThree(t, srv, testOpts{})
	ms[0].held(t, "db", "v1", 8)
	_, err := ms[1].c.Hooks().Held(context.Background(), "db", "v1", 4)
	if !errors.Is(err, ErrPartitionCount) {
		t.Fatalf("Held with another partition count: %v, want ErrPartitionCount", err)
	}
}

func TestHeldReturnsWhenCancelled(t *testing.T) {
	srv := memtopo.NewServer()
	srv.SetDown(true)
	m := join(t, srv, "10.0.0.1:1", testOpts{})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := m.c.Hooks().Held(ctx, "db", "v1", 8); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Held while the service is down: %v, want the context's error", err)
	}
}

func TestActivatorForgetsDroppedVersions(t *testing.T) {
	srv := memtopo.NewServer()
	ms := startThree(t, srv, testOpts{})
	for _, m := range ms {
		m.act.mu.Lock()
		m.act.gone = map[string]bool{"db/v1": true}
		m.act.mu.Unlock()
		m.ready("db", "v1", m.held(t, "db", "v1", 8), 8)
	}
	waitUntil(t, "dropped version forgotten", func() bool {
		ms[0].c.mu.Lock()
		defer ms[0].c.mu.Unlock()
		return len(ms[0].c.tracked) == 0
	})
}

// TestGuessBeforeConvergence: once the node list has been stable for a
// moment (guessAfter), Guess answers what the decision will be, well
// before the node may decide, and publishes nothing; once converged it
// answers false (Held answers at once then).
func TestGuessBeforeConvergence(t *testing.T) {
	srv := memtopo.NewServer()
	const ttc = 2 * time.Second
	ms := startThree(t, srv, testOpts{timeToConverge: ttc})
	a := ms[0]
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	guess, ok := a.c.Hooks().Guess(ctx, "db", "v1", 8)
	if !ok {
		t.Fatal("no guess before convergence")
	}
	if took := time.Since(start); took >= ttc {
		t.Errorf("guessed after %v, not before the %v convergence wait", took, ttc)
	}
	if a.c.Converged() {
		t.Error("converged already when guessing")
	}
	if v := a.conn.Map().Version("db", "v1"); v != nil {
		t.Errorf("a guess published the version: %+v", v)
	}
	if held := a.held(t, "db", "v1", 8); !reflect.DeepEqual(held, guess) {
		t.Errorf("guessed %v, decided %v", guess, held)
	}
	if g, ok := a.c.Hooks().Guess(ctx, "db", "v2", 8); ok {
		t.Errorf("guessed %v once converged; want no guess", g)
	}
}
