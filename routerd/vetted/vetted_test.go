package vetted

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"spangle/shared/tlsconfig"
	"spangle/shared/topo"
	"spangle/shared/topo/memtopo"
)

// checks is a scripted Check: each address answers what it is set to.
type checks struct {
	mu    sync.Mutex
	state map[string]error
	calls map[string]int
}

func (c *checks) set(addr string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.state[addr] = err
}

func (c *checks) check(_ context.Context, addr string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls[addr]++
	if err, ok := c.state[addr]; ok {
		return err
	}
	return errors.New("connection refused")
}

// publish registers a node at addr and publishes db/v1 (2 partitions)
// with the given partitions held by it.
func publish(t *testing.T, srv *memtopo.Server, addr string, parts ...int) {
	t.Helper()
	ctx := context.Background()
	c := srv.Conn()
	t.Cleanup(func() { c.Close() })
	if err := c.RegisterNode(ctx, topo.Node{ID: addr, Addr: addr}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PublishVersion(ctx, "db", "v1", topo.VersionInfo{NumPartitions: 2}); err != nil {
		t.Fatal(err)
	}
	for _, p := range parts {
		if err := c.PublishPartition(ctx, "db", "v1", p, addr); err != nil {
			t.Fatal(err)
		}
	}
}

// run runs w's checks until the test ends.
func run(t *testing.T, w *Watcher) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

func waitMap(t *testing.T, w *Watcher, what string, cond func(*topo.Map) bool) *topo.Map {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m := w.Map()
	for !cond(m) {
		var err error
		if m, err = w.Wait(ctx, m.Revision); err != nil {
			t.Fatalf("waiting for %s: %v; last map %+v", what, err, w.Map())
		}
	}
	return m
}

// A node whose certificate is refused neither counts nor is listed,
// until a check passes; the good node's partitions count at once, and
// a db only good nodes serve is the inner map's own.
func TestRefusedNodeIsLeftOutUntilVerified(t *testing.T) {
	srv := memtopo.NewServer()
	c := &checks{state: map[string]error{"good:1": nil,
		"rogue:1": fmt.Errorf("%w: wrong CA", tlsconfig.ErrPeerRefused)}, calls: map[string]int{}}
	w, err := New(srv.Watcher(), Options{Check: c.check, RetryRefused: 50 * time.Millisecond, RetryUnreachable: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	run(t, w)

	publish(t, srv, "good:1", 0)
	publish(t, srv, "rogue:1", 1)
	m := waitMap(t, w, "the good node verified", func(m *topo.Map) bool { _, ok := m.Nodes["good:1"]; return ok })
	if _, ok := m.Nodes["rogue:1"]; ok {
		t.Fatal("the refused node is listed")
	}
	if v := m.Version("db", "v1"); v.Complete(1) || len(v.Replicas[1]) != 0 || !reflect.DeepEqual(v.Replicas[0], []string{"good:1"}) {
		t.Fatalf("v1 as served: %+v; want partition 1 without a replica", v)
	}
	if got := srv.Watcher().Map().Version("db", "v1"); !got.Complete(1) {
		t.Fatal("the inner map lost a replica: the filter must copy")
	}
	// Refused again at each retry, never admitted.
	time.Sleep(200 * time.Millisecond)
	c.mu.Lock()
	tries := c.calls["rogue:1"]
	c.mu.Unlock()
	if tries < 2 {
		t.Fatalf("the refused node was checked %d times in 200 ms with a 50 ms retry", tries)
	}
	if v := w.Map().Version("db", "v1"); v.Complete(1) {
		t.Fatal("v1 complete while its partition 1 has only a refused node")
	}
	// Its certificate fixed (a rotation), it is admitted.
	before := w.Map().Revision
	c.set("rogue:1", nil)
	m = waitMap(t, w, "the fixed node admitted", func(m *topo.Map) bool { return m.Version("db", "v1").Complete(1) })
	if m.Revision <= before {
		t.Fatalf("revision %d after %d", m.Revision, before)
	}
	// Everyone verified: the versions are the inner map's own.
	w.mu.Lock()
	in := w.lastIn
	w.mu.Unlock()
	if w.Map() != m {
		t.Fatal("the map changed meanwhile")
	}
	if reflect.ValueOf(m.DBs["db"]).UnsafePointer() != reflect.ValueOf(in.DBs["db"]).UnsafePointer() {
		t.Error("with every node verified the db's versions are copied, not shared")
	}
}

// An unreachable node is checked again soon, and counts once it answers.
func TestUnreachableNodeIsCheckedAgain(t *testing.T) {
	srv := memtopo.NewServer()
	c := &checks{state: map[string]error{}, calls: map[string]int{}}
	w, err := New(srv.Watcher(), Options{Check: c.check, RetryUnreachable: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	run(t, w)
	publish(t, srv, "late:1", 0, 1)
	time.Sleep(100 * time.Millisecond)
	if v := w.Map().Version("db", "v1"); v != nil && v.Complete(1) {
		t.Fatal("an unreachable node counted")
	}
	c.set("late:1", nil)
	waitMap(t, w, "the late node admitted", func(m *topo.Map) bool { return m.Version("db", "v1").Complete(1) })
}
