package topotest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"spangle/shared/topo"
)

// Backend is what the suite needs from a backend under test. All of its
// functions are required.
type Backend struct {
	// NewConn opens a Conn with its own session, up by the time it
	// returns. The suite closes it;
	// the backend may close it again at cleanup.
	NewConn func(t *testing.T) topo.Conn
	// NewWatcher opens a read-only view; the backend closes it at
	// cleanup.
	NewWatcher func(t *testing.T) topo.Watcher
	// Down makes the service unreachable for every client; Up brings it
	// back. Sessions may survive, as they do a ZooKeeper restart.
	Down, Up func(t *testing.T)
	// Cut cuts c off the service so that its session expires, at once
	// or after the session timeout; Heal lets c reach the service again.
	Cut, Heal func(t *testing.T, c topo.Conn)
}

// Timeout bounds every wait of the suite. It is generous: other tests may
// load the machine, and a session must be able to time out within it.
const Timeout = 60 * time.Second

// Run runs the suite as subtests of t.
func Run(t *testing.T, b Backend) {
	t.Run("RegisterNode", func(t *testing.T) { testRegisterNode(t, b) })
	t.Run("PublishVersionFirstWriterWins", func(t *testing.T) { testPublishVersion(t, b) })
	t.Run("PublishUnpublishPartition", func(t *testing.T) { testPartitions(t, b) })
	t.Run("CloseRemovesEphemerals", func(t *testing.T) { testClose(t, b) })
	t.Run("BadNames", func(t *testing.T) { testBadNames(t, b) })
	t.Run("OutageKeepsLastMap", func(t *testing.T) { testOutage(t, b) })
	t.Run("RepublishAfterSessionLoss", func(t *testing.T) { testSessionLoss(t, b) })
}

// WaitMap waits until ok holds for w's map and returns that map. It fails
// the test after Timeout, saying what it waited for.
func WaitMap(t testing.TB, w topo.Watcher, what string, ok func(*topo.Map) bool) *topo.Map {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	m := w.Map()
	for !ok(m) {
		next, err := w.Wait(ctx, m.Revision)
		if err != nil {
			t.Fatalf("topotest: waiting for %s: %v; last map: %s", what, err, dump(m))
		}
		m = next
	}
	return m
}

func dump(m *topo.Map) string {
	s := fmt.Sprintf("rev %d nodes [", m.Revision)
	for addr, n := range m.Nodes {
		s += fmt.Sprintf(" %s(%s)", addr, n.ShardID)
	}
	s += " ] dbs {"
	for _, db := range m.DBNames() {
		for _, v := range m.VersionNames(db) {
			s += fmt.Sprintf(" %s/%s:%d%v", db, v, m.Version(db, v).NumPartitions, m.Version(db, v).Replicas)
		}
	}
	return s + " }"
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	t.Cleanup(cancel)
	return ctx
}

func hasNode(addr, id string) func(*topo.Map) bool {
	return func(m *topo.Map) bool { n, ok := m.Nodes[addr]; return ok && n.ID == id }
}

func noNode(addr string) func(*topo.Map) bool {
	return func(m *topo.Map) bool { _, ok := m.Nodes[addr]; return !ok }
}

func hasReplica(db, version string, p int, addr string) func(*topo.Map) bool {
	return func(m *topo.Map) bool { return slices.Contains(m.Replicas(db, version, p), addr) }
}

func noReplica(db, version string, p int, addr string) func(*topo.Map) bool {
	return func(m *topo.Map) bool { return !slices.Contains(m.Replicas(db, version, p), addr) }
}

func all(fs ...func(*topo.Map) bool) func(*topo.Map) bool {
	return func(m *topo.Map) bool {
		for _, f := range fs {
			if !f(m) {
				return false
			}
		}
		return true
	}
}

func info(n int) topo.VersionInfo {
	return topo.VersionInfo{NumPartitions: n, Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func testRegisterNode(t *testing.T, b Backend) {
	ctx := ctxT(t)
	c := b.NewConn(t)
	defer c.Close()
	w := b.NewWatcher(t)
	started := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	n := topo.Node{ID: "id-reg", Addr: "127.0.0.1:7001", Started: started}
	if err := c.RegisterNode(ctx, n); err != nil {
		t.Fatalf("RegisterNode: %v", err)
	}
	// The Conn's own map and a separate watcher both see it, with the
	// shard id defaulted to the address.
	for name, view := range map[string]topo.Watcher{"conn": c, "watcher": w} {
		m := WaitMap(t, view, name+" sees the node", hasNode(n.Addr, n.ID))
		got := m.Nodes[n.Addr]
		if got.ShardID != n.Addr || !got.Started.Equal(started) || got.Addr != n.Addr {
			t.Errorf("%s: node = %+v, want shard id %s and start %v", name, got, n.Addr, started)
		}
	}
	if !c.Connected() {
		t.Error("Connected() = false after a successful publish")
	}
	// Registering again under another shard id replaces the entry.
	n.ShardID = "shard-x"
	if err := c.RegisterNode(ctx, n); err != nil {
		t.Fatalf("RegisterNode again: %v", err)
	}
	m := WaitMap(t, w, "the new shard id", func(m *topo.Map) bool { return m.Nodes[n.Addr].ShardID == "shard-x" })
	if len(m.Nodes) != 1 {
		t.Errorf("nodes after re-registering = %v, want only %s", m.Nodes, n.Addr)
	}
}

func testPublishVersion(t *testing.T, b Backend) {
	ctx := ctxT(t)
	c1, c2 := b.NewConn(t), b.NewConn(t)
	defer c1.Close()
	defer c2.Close()
	w := b.NewWatcher(t)
	got, err := c1.PublishVersion(ctx, "fw", "v1", info(4))
	if err != nil || got != info(4) {
		t.Fatalf("first PublishVersion = %+v, %v; want %+v", got, err, info(4))
	}
	second := info(8)
	second.Created = second.Created.Add(time.Hour)
	got, err = c2.PublishVersion(ctx, "fw", "v1", second)
	if err != nil || got.NumPartitions != 4 || !got.Created.Equal(info(4).Created) {
		t.Fatalf("second PublishVersion = %+v, %v; want the first writer's %+v", got, err, info(4))
	}
	m := WaitMap(t, w, "version fw/v1", func(m *topo.Map) bool { return m.Version("fw", "v1") != nil })
	if v := m.Version("fw", "v1"); v.NumPartitions != 4 || len(v.Replicas) != 4 {
		t.Errorf("fw/v1 in the map = %+v, want 4 partitions", v)
	}
	// A partition published first creates the version without info; it
	// is not in the map until PublishVersion fills it in.
	if err := c1.PublishPartition(ctx, "fw", "v2", 1, "127.0.0.1:7002"); err != nil {
		t.Fatalf("PublishPartition before PublishVersion: %v", err)
	}
	got, err = c2.PublishVersion(ctx, "fw", "v2", info(3))
	if err != nil || got != info(3) {
		t.Fatalf("PublishVersion over an info-less version = %+v, %v; want %+v", got, err, info(3))
	}
	WaitMap(t, w, "fw/v2 with its replica", hasReplica("fw", "v2", 1, "127.0.0.1:7002"))
}

func testPartitions(t *testing.T, b Backend) {
	ctx := ctxT(t)
	c := b.NewConn(t)
	defer c.Close()
	w := b.NewWatcher(t)
	const a1, a2 = "127.0.0.1:7011", "127.0.0.1:7012"
	if _, err := c.PublishVersion(ctx, "pp", "v1", info(2)); err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct {
		p    int
		addr string
	}{{0, a1}, {1, a1}, {1, a2}} {
		if err := c.PublishPartition(ctx, "pp", "v1", r.p, r.addr); err != nil {
			t.Fatalf("PublishPartition %d@%s: %v", r.p, r.addr, err)
		}
	}
	// Publishing twice is harmless.
	if err := c.PublishPartition(ctx, "pp", "v1", 0, a1); err != nil {
		t.Fatalf("PublishPartition again: %v", err)
	}
	m := WaitMap(t, w, "three replicas", all(hasReplica("pp", "v1", 0, a1), hasReplica("pp", "v1", 1, a1), hasReplica("pp", "v1", 1, a2)))
	if !m.Version("pp", "v1").Complete(1) || m.Version("pp", "v1").Complete(2) {
		t.Errorf("pp/v1 replicas %v: want complete at 1, not at 2", m.Version("pp", "v1").Replicas)
	}
	if err := c.UnpublishPartition(ctx, "pp", "v1", 1, a1); err != nil {
		t.Fatalf("UnpublishPartition: %v", err)
	}
	if err := c.UnpublishPartition(ctx, "pp", "v1", 1, a1); err != nil {
		t.Fatalf("UnpublishPartition of an absent entry: %v", err)
	}
	if err := c.UnpublishPartition(ctx, "pp", "never", 0, a1); err != nil {
		t.Fatalf("UnpublishPartition of an absent version: %v", err)
	}
	m = WaitMap(t, w, "1@a1 gone", noReplica("pp", "v1", 1, a1))
	if got := m.Replicas("pp", "v1", 1); !slices.Equal(got, []string{a2}) {
		t.Errorf("replicas of partition 1 = %v, want [%s]", got, a2)
	}
	WaitMap(t, c, "the Conn's own map agrees", noReplica("pp", "v1", 1, a1))
}

func testClose(t *testing.T, b Backend) {
	ctx := ctxT(t)
	c := b.NewConn(t)
	w := b.NewWatcher(t)
	n := topo.Node{ID: "id-close", Addr: "127.0.0.1:7021"}
	if err := c.RegisterNode(ctx, n); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PublishVersion(ctx, "cl", "v1", info(1)); err != nil {
		t.Fatal(err)
	}
	if err := c.PublishPartition(ctx, "cl", "v1", 0, n.Addr); err != nil {
		t.Fatal(err)
	}
	WaitMap(t, w, "the node and its replica", all(hasNode(n.Addr, n.ID), hasReplica("cl", "v1", 0, n.Addr)))
	rev := c.Map().Revision
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	m := WaitMap(t, w, "the node and replica gone", all(noNode(n.Addr), noReplica("cl", "v1", 0, n.Addr)))
	if m.Version("cl", "v1") == nil {
		t.Error("the persistent version entry went with the session")
	}
	// Every method of a closed Conn says so.
	checks := map[string]error{
		"RegisterNode":       c.RegisterNode(ctx, n),
		"PublishPartition":   c.PublishPartition(ctx, "cl", "v1", 0, n.Addr),
		"UnpublishPartition": c.UnpublishPartition(ctx, "cl", "v1", 0, n.Addr),
	}
	_, checks["PublishVersion"] = c.PublishVersion(ctx, "cl", "v2", info(1))
	wctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	_, checks["Wait"] = c.Wait(wctx, rev+1000)
	for name, err := range checks {
		if !errors.Is(err, topo.ErrClosed) {
			t.Errorf("%s after Close = %v, want ErrClosed", name, err)
		}
	}
	if c.Connected() {
		t.Error("Connected() after Close")
	}
	if c.Map() == nil {
		t.Error("Map() = nil after Close")
	}
}

func testBadNames(t *testing.T, b Backend) {
	ctx := ctxT(t)
	c := b.NewConn(t)
	defer c.Close()
	const addr = "127.0.0.1:7031"
	errs := map[string]error{
		"empty addr":        c.RegisterNode(ctx, topo.Node{ID: "x"}),
		"addr with @":       c.RegisterNode(ctx, topo.Node{ID: "x", Addr: "a@b:1"}),
		"shard id with /":   c.RegisterNode(ctx, topo.Node{ID: "x", Addr: addr, ShardID: "a/b"}),
		"db with /":         c.PublishPartition(ctx, "a/b", "v1", 0, addr),
		"hidden version":    c.PublishPartition(ctx, "db", "_v", 0, addr),
		"negative part":     c.PublishPartition(ctx, "db", "v1", -1, addr),
		"partition no addr": c.PublishPartition(ctx, "db", "v1", 0, ""),
		"unpublish bad db":  c.UnpublishPartition(ctx, "..", "v1", 0, addr),
	}
	_, errs["version with @"] = c.PublishVersion(ctx, "db", "v@1", info(1))
	_, errs["no partitions"] = c.PublishVersion(ctx, "db", "v1", info(0))
	_, errs["too many partitions"] = c.PublishVersion(ctx, "db", "v1", info(topo.MaxPartitions+1))
	errs["partition beyond bound"] = c.PublishPartition(ctx, "db", "v1", topo.MaxPartitions, addr)
	for name, err := range errs {
		if !errors.Is(err, topo.ErrBadName) {
			t.Errorf("%s: err = %v, want ErrBadName", name, err)
		}
	}
	for _, db := range c.Map().DBNames() {
		if db == "db" {
			t.Errorf("a rejected call published db: %s", dump(c.Map()))
		}
	}
}

func testOutage(t *testing.T, b Backend) {
	ctx := ctxT(t)
	c := b.NewConn(t)
	defer c.Close()
	w := b.NewWatcher(t)
	n := topo.Node{ID: "id-out", Addr: "127.0.0.1:7041"}
	if err := c.RegisterNode(ctx, n); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PublishVersion(ctx, "out", "v1", info(3)); err != nil {
		t.Fatal(err)
	}
	for p := 0; p < 2; p++ {
		if err := c.PublishPartition(ctx, "out", "v1", p, n.Addr); err != nil {
			t.Fatal(err)
		}
	}
	before := all(hasNode(n.Addr, n.ID), hasReplica("out", "v1", 0, n.Addr), hasReplica("out", "v1", 1, n.Addr))
	WaitMap(t, w, "the published entries", before)
	WaitMap(t, c, "the published entries in the Conn's own map", before)

	b.Down(t)
	// Calls fail promptly with ErrUnavailable (the first may still have
	// found the old connection; within the deadline they all must).
	deadline := time.Now().Add(Timeout)
	for {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		start := time.Now()
		err := c.PublishPartition(cctx, "out", "v1", 2, n.Addr)
		cancel()
		if errors.Is(err, topo.ErrUnavailable) {
			break
		}
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("PublishPartition during the outage = %v, want ErrUnavailable", err)
		}
		if took := time.Since(start); err != nil && took > 11*time.Second {
			t.Fatalf("PublishPartition during the outage took %v, beyond its context", took)
		}
		if time.Now().After(deadline) {
			t.Fatalf("PublishPartition during the outage kept answering %v", err)
		}
	}
	if err := c.UnpublishPartition(ctx, "out", "v1", 0, n.Addr); !errors.Is(err, topo.ErrUnavailable) {
		t.Fatalf("UnpublishPartition during the outage = %v, want ErrUnavailable", err)
	}
	if c.Connected() {
		t.Error("Connected() during the outage")
	}
	// The last maps stay in force.
	for name, view := range map[string]topo.Watcher{"conn": c, "watcher": w} {
		if m := view.Map(); !before(m) {
			t.Errorf("%s's map during the outage lost entries: %s", name, dump(m))
		}
	}

	b.Up(t)
	// What was asked during the outage is applied once the service is
	// back, and what was published before is still (or again) there.
	WaitMap(t, w, "the outage's changes applied", all(hasNode(n.Addr, n.ID), noReplica("out", "v1", 0, n.Addr),
		hasReplica("out", "v1", 1, n.Addr), hasReplica("out", "v1", 2, n.Addr)))
	waitTrue(t, "Connected() after the outage", c.Connected)
}

func testSessionLoss(t *testing.T, b Backend) {
	ctx := ctxT(t)
	c := b.NewConn(t)
	defer c.Close()
	w := b.NewWatcher(t)
	n := topo.Node{ID: "id-exp", Addr: "127.0.0.1:7051"}
	if err := c.RegisterNode(ctx, n); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PublishVersion(ctx, "exp", "v1", info(2)); err != nil {
		t.Fatal(err)
	}
	if err := c.PublishPartition(ctx, "exp", "v1", 1, n.Addr); err != nil {
		t.Fatal(err)
	}
	there := all(hasNode(n.Addr, n.ID), hasReplica("exp", "v1", 1, n.Addr))
	WaitMap(t, w, "the published entries", there)
	WaitMap(t, c, "the published entries in the Conn's own map", there)

	b.Cut(t, c)
	WaitMap(t, w, "the expired session's entries gone", all(noNode(n.Addr), noReplica("exp", "v1", 1, n.Addr)))
	if !there(c.Map()) {
		t.Errorf("the cut Conn's own map lost its entries: %s", dump(c.Map()))
	}
	b.Heal(t, c)
	WaitMap(t, w, "the entries published again", there)
	WaitMap(t, c, "the Conn's own map", there)
	waitTrue(t, "Connected() after the new session", c.Connected)
}

func waitTrue(t *testing.T, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(Timeout)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("topotest: %s: still false after %v", what, Timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
