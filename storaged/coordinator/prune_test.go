package coordinator

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"spangle/shared/dbver"
	"spangle/shared/topo"
	"spangle/shared/topo/memtopo"
)

func TestSuperseded(t *testing.T) {
	var b topo.Builder
	b.AddNode(topo.Node{Addr: "n1", ShardID: "n1"})
	add := func(db, version string, replicas ...[]string) {
		b.AddVersion(db, version, topo.VersionInfo{NumPartitions: len(replicas)})
		for p, rs := range replicas {
			for _, r := range rs {
				b.AddReplica(db, version, p, r)
			}
		}
	}
	none, one := []string{}, []string{"n1"}
	add("a", "v1", none, none) // superseded, unserved
	add("a", "v2", one, one)   // served
	add("a", "v3", none, none) // newer than the served one: loading
	add("b", "v1", one, none)  // superseded, still served in part
	add("b", "v2", one, one)
	add("c", "v1", none) // the only version: never
	add("d", "v1", none)
	add("d", "v2", one, none) // incomplete: nothing is superseded
	m := b.Build(1)
	as := []topo.Assignment{
		{DB: "a", Version: "v0"}, // its version entry is gone already
		{DB: "a", Version: "v2"}, // served
		{DB: "c", Version: "v0"}, // no complete version of c
	}
	want := []dbver.Version{{DB: "a", Version: "v0"}, {DB: "a", Version: "v1"}}
	if got := superseded(m, as, 1); !reflect.DeepEqual(got, want) {
		t.Errorf("superseded = %v, want %v", got, want)
	}
	// At min_replication 2 no version of a is complete.
	if got := superseded(m, as, 2); len(got) != 0 {
		t.Errorf("superseded at min_replication 2 = %v, want none", got)
	}
}

// pruneFixture is a leader on memtopo driven round by round on a fake
// clock, and a node that publishes versions.
type pruneFixture struct {
	t     *testing.T
	srv   *memtopo.Server
	lead  *memtopo.Conn
	node  *memtopo.Conn
	c     *Coordinator
	l     topo.Leadership
	st    *leaderState
	now   time.Time
	start time.Time
	logs  *observer.ObservedLogs
}

const nodeAddr = "127.0.0.1:2"

func newPruneFixture(t *testing.T, opts Options) *pruneFixture {
	srv := memtopo.NewServer()
	f := &pruneFixture{t: t, srv: srv, lead: srv.Conn(), node: srv.Conn(), st: newLeaderState(),
		start: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)}
	f.now = f.start
	t.Cleanup(func() { f.lead.Close(); f.node.Close() })
	ctx := context.Background()
	if err := f.node.RegisterNode(ctx, topo.Node{ID: "n", Addr: nodeAddr}); err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zapcore.DebugLevel)
	f.logs = logs
	opts.Conn, opts.Coord = f.lead, f.lead
	opts.Self = topo.Node{Addr: "127.0.0.1:1"}
	opts.RereplicateAfter = -1 // this leader only prunes
	opts.Log = zap.New(core)
	opts.Now = func() time.Time { return f.now }
	var err error
	if f.c, err = New(opts); err != nil {
		t.Fatal(err)
	}
	if f.l, err = f.lead.Campaign(ctx, "127.0.0.1:1"); err != nil {
		t.Fatal(err)
	}
	return f
}

// serve publishes db/version with n partitions, the given ones served.
func (f *pruneFixture) serve(db, version string, n int, parts ...int) {
	f.t.Helper()
	ctx := context.Background()
	if _, err := f.node.PublishVersion(ctx, db, version, topo.VersionInfo{NumPartitions: n}); err != nil {
		f.t.Fatal(err)
	}
	for _, p := range parts {
		if err := f.node.PublishPartition(ctx, db, version, p, nodeAddr); err != nil {
			f.t.Fatal(err)
		}
	}
}

func (f *pruneFixture) drop(db, version string, parts ...int) {
	f.t.Helper()
	for _, p := range parts {
		if err := f.node.UnpublishPartition(context.Background(), db, version, p, nodeAddr); err != nil {
			f.t.Fatal(err)
		}
	}
}

// roundAt runs one leader round at start+at.
func (f *pruneFixture) roundAt(at time.Duration) {
	f.t.Helper()
	f.now = f.start.Add(at)
	if err := f.c.round(context.Background(), f.l, f.st); err != nil {
		f.t.Fatalf("round at %v: %v", at, err)
	}
}

// versions returns db/version names in the map, and in the assignments.
func (f *pruneFixture) versions() (inMap, assigned []string) {
	f.t.Helper()
	m := f.lead.Map()
	for _, db := range m.DBNames() {
		for _, v := range m.VersionNames(db) {
			inMap = append(inMap, db+"/"+v)
		}
	}
	as, err := f.lead.Assignments(context.Background())
	if err != nil {
		f.t.Fatal(err)
	}
	for _, a := range as {
		assigned = append(assigned, a.DB+"/"+a.Version)
	}
	return inMap, assigned
}

func (f *pruneFixture) want(when string, inMap, assigned []string) {
	f.t.Helper()
	gotMap, gotAssigned := f.versions()
	if !reflect.DeepEqual(gotMap, inMap) || !reflect.DeepEqual(gotAssigned, assigned) {
		f.t.Fatalf("%s: versions %v, assignments %v; want %v, %v", when, gotMap, gotAssigned, inMap, assigned)
	}
}

func (f *pruneFixture) assign(as ...topo.Assignment) {
	f.t.Helper()
	ctx := context.Background()
	ring, err := f.lead.Ring(ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	d, err := f.lead.LastDecision(ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.lead.Commit(ctx, topo.Fence{Token: f.l.Token(), Ring: ring, Epoch: d.Epoch}, "127.0.0.1:1", as); err != nil {
		f.t.Fatal(err)
	}
}

func (f *pruneFixture) pruneLogs() []string {
	var out []string
	for _, e := range f.logs.FilterMessage("version pruned: superseded and unserved").All() {
		out = append(out, e.ContextMap()["db"].(string)+"/"+e.ContextMap()["version"].(string))
	}
	return out
}

func TestLeaderPrunesAfterGrace(t *testing.T) {
	const grace = time.Minute
	f := newPruneFixture(t, Options{PruneAfter: grace, MinReplication: 2})
	// Two nodes' worth of replicas: min_replication 2 counts addresses.
	second := f.srv.Conn()
	defer second.Close()
	serve2 := func(db, version string, parts ...int) {
		for _, p := range parts {
			if err := second.PublishPartition(context.Background(), db, version, p, "127.0.0.1:3"); err != nil {
				t.Fatal(err)
			}
		}
	}
	f.serve("a", "v1", 2, 0, 1)
	f.serve("a", "v2", 2, 0, 1)
	serve2("a", "v2", 0, 1)
	f.drop("a", "v1", 0, 1) // every node dropped a/v1: to be pruned
	f.serve("b", "v1", 1)   // b/v1 keeps a replica: kept
	f.serve("b", "v2", 1, 0)
	serve2("b", "v1", 0)
	serve2("b", "v2", 0)
	f.serve("c", "v1", 1)    // newest of c, unserved: kept
	f.serve("d", "v1", 1, 0) // complete at 1 only
	f.serve("d", "v0", 1)    // older, unserved, but d has no version complete at 2: kept
	f.assign(topo.Assignment{DB: "a", Version: "v0", Replicas: [][]string{{"x"}, {"x"}}},
		topo.Assignment{DB: "a", Version: "v1", Replicas: [][]string{{"x"}, {"x"}}})
	all := []string{"a/v1", "a/v2", "b/v1", "b/v2", "c/v1", "d/v0", "d/v1"}
	f.want("before", all, []string{"a/v0", "a/v1"})

	f.roundAt(0)
	f.roundAt(grace - time.Second)
	f.want("within the grace period", all, []string{"a/v0", "a/v1"})
	f.roundAt(grace)
	kept := []string{"a/v2", "b/v1", "b/v2", "c/v1", "d/v0", "d/v1"}
	f.want("after the grace period", kept, nil)
	if got := f.pruneLogs(); !reflect.DeepEqual(got, []string{"a/v0", "a/v1"}) {
		t.Errorf("prune logs %v, want a/v0 and a/v1 once each", got)
	}
	for i := 1; i <= 10; i++ {
		f.roundAt(grace + time.Duration(i)*grace)
	}
	f.want("ten grace periods later", kept, nil)
	if got := f.pruneLogs(); len(got) != 2 {
		t.Errorf("prune logs %v after more rounds, want the first two only", got)
	}
}

// A replica that comes back, even for a moment, starts the wait again.
func TestPruneWaitRestartsWhenServedAgain(t *testing.T) {
	const grace = time.Minute
	f := newPruneFixture(t, Options{PruneAfter: grace})
	f.serve("a", "v1", 1)
	f.serve("a", "v2", 1, 0)
	f.roundAt(0)
	f.serve("a", "v1", 1, 0)
	f.roundAt(30 * time.Second)
	f.drop("a", "v1", 0)
	f.roundAt(31 * time.Second)
	f.roundAt(grace)
	f.want("a minute after it was first unserved", []string{"a/v1", "a/v2"}, nil)
	f.roundAt(31*time.Second + grace)
	f.want("a minute after it was last served", []string{"a/v2"}, nil)
}

// The service away: the deletion fails, is logged once, and is done
// once it is back, without waiting the grace period again.
func TestPruneOutage(t *testing.T) {
	const grace = time.Minute
	f := newPruneFixture(t, Options{PruneAfter: grace})
	f.serve("a", "v1", 1)
	f.serve("a", "v2", 1, 0)
	f.roundAt(0)
	// Only the leader is cut off; prune is called as its round would.
	f.now = f.start.Add(grace)
	f.srv.Isolate(f.lead, true)
	m := f.lead.Map()
	for range 3 {
		if err := f.c.prune(context.Background(), m, nil, f.st, f.now); !errors.Is(err, topo.ErrUnavailable) {
			t.Fatalf("prune while cut off = %v, want ErrUnavailable", err)
		}
	}
	// A whole round fails earlier, and logs nothing of pruning.
	if err := f.c.round(context.Background(), f.l, f.st); !errors.Is(err, topo.ErrUnavailable) {
		t.Fatalf("round while cut off = %v", err)
	}
	f.srv.Isolate(f.lead, false)
	f.roundAt(grace + time.Second)
	f.want("after the outage", []string{"a/v2"}, nil)

	// With the whole service down, rounds fail and the leader keeps
	// going.
	f.serve("a", "v3", 1, 0)
	f.drop("a", "v2", 0)
	f.roundAt(2 * grace)
	f.srv.SetDown(true)
	f.now = f.start.Add(4 * grace)
	if err := f.c.round(context.Background(), f.l, f.st); !errors.Is(err, topo.ErrUnavailable) {
		t.Fatalf("round while down = %v", err)
	}
	f.srv.SetDown(false)
	f.roundAt(4 * grace)
	f.want("after the service came back", []string{"a/v3"}, nil)
}

// Negative PruneAfter turns pruning off.
func TestPruneOff(t *testing.T) {
	f := newPruneFixture(t, Options{PruneAfter: -1})
	f.serve("a", "v1", 1)
	f.serve("a", "v2", 1, 0)
	for i := range 5 {
		f.roundAt(time.Duration(i) * time.Hour)
	}
	f.want("pruning off", []string{"a/v1", "a/v2"}, nil)
}
