package topotest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"spangle/shared/topo"
)

// RunCoordination runs the suite of topo.Coordination as subtests of t.
// b.NewConn's Conns must implement topo.Coordination; the suite uses
// NewConn, Cut and Heal.
func RunCoordination(t *testing.T, b Backend) {
	t.Run("ElectionOrder", func(t *testing.T) { testElectionOrder(t, b) })
	t.Run("LeaderSessionLoss", func(t *testing.T) { testLeaderSessionLoss(t, b) })
	t.Run("CommitFencedByEpoch", func(t *testing.T) { testCommitEpoch(t, b) })
	t.Run("CommitFencedByRing", func(t *testing.T) { testCommitRing(t, b) })
	t.Run("TwoWouldBeLeaders", func(t *testing.T) { testTwoLeaders(t, b) })
	t.Run("Pins", func(t *testing.T) { testPins(t, b) })
	runPrune(t, b)
}

// coordConn is a Conn with the coordinator's operations.
type coordConn interface {
	topo.Conn
	topo.Coordination
}

func newCoord(t *testing.T, b Backend) coordConn {
	t.Helper()
	c := b.NewConn(t)
	cc, ok := c.(coordConn)
	if !ok {
		t.Fatalf("topotest: %T does not implement topo.Coordination", c)
	}
	return cc
}

// campaign starts c's campaign and returns a channel that yields its
// outcome.
func campaign(ctx context.Context, c topo.Coordination, id string) <-chan topo.Leadership {
	ch := make(chan topo.Leadership, 1)
	go func() {
		l, err := c.Campaign(ctx, id)
		if err != nil {
			close(ch)
			return
		}
		ch <- l
	}()
	return ch
}

func mustLead(t *testing.T, ch <-chan topo.Leadership, who string) topo.Leadership {
	t.Helper()
	select {
	case l, ok := <-ch:
		if !ok {
			t.Fatalf("%s's campaign failed", who)
		}
		return l
	case <-time.After(Timeout):
		t.Fatalf("%s does not lead within %v", who, Timeout)
	}
	return nil
}

func notYet(t *testing.T, ch <-chan topo.Leadership, who string) {
	t.Helper()
	select {
	case l, ok := <-ch:
		if ok {
			t.Fatalf("%s leads (entry %s) while another candidate entered first", who, l.Token())
		}
		t.Fatalf("%s's campaign failed", who)
	case <-time.After(200 * time.Millisecond):
	}
}

func waitLost(t *testing.T, l topo.Leadership, who string) {
	t.Helper()
	select {
	case <-l.Lost():
	case <-time.After(Timeout):
		t.Fatalf("%s's leadership is not reported lost within %v", who, Timeout)
	}
}

func wantLeader(t *testing.T, c topo.Coordination, id, token string) {
	t.Helper()
	gotID, gotToken, err := c.Leader(ctxT(t))
	if err != nil || gotID != id || (token != "" && gotToken != token) {
		t.Fatalf("Leader() = %q, %q, %v; want %q, %q", gotID, gotToken, err, id, token)
	}
}

func testElectionOrder(t *testing.T, b Backend) {
	ctx := ctxT(t)
	a, bb, c := newCoord(t, b), newCoord(t, b), newCoord(t, b)
	defer a.Close()
	defer bb.Close()
	if id, token, err := a.Leader(ctx); err != nil || id != "" || token != "" {
		t.Fatalf("Leader() before any campaign = %q, %q, %v", id, token, err)
	}
	la := mustLead(t, campaign(ctx, a, "a:1"), "a")
	wantLeader(t, bb, "a:1", la.Token())
	chB := campaign(ctx, bb, "b:1")
	notYet(t, chB, "b")
	chC := campaign(ctx, c, "c:1")
	notYet(t, chC, "c")

	// a resigns: b, who entered before c, leads.
	if err := la.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	waitLost(t, la, "a")
	lb := mustLead(t, chB, "b")
	notYet(t, chC, "c")
	wantLeader(t, a, "b:1", lb.Token())
	if lb.Token() == la.Token() {
		t.Fatalf("b's token %s equals a's", lb.Token())
	}
	// b's session ends: c leads.
	bb.Close()
	waitLost(t, lb, "b")
	lc := mustLead(t, chC, "c")
	wantLeader(t, a, "c:1", lc.Token())

	// A campaign whose context ends is withdrawn.
	wctx, cancel := context.WithCancel(ctx)
	chA := campaign(wctx, a, "a:2")
	notYet(t, chA, "a")
	cancel()
	if l, ok := <-chA; ok {
		t.Fatalf("a's cancelled campaign leads with %s", l.Token())
	}
	c.Close()
	waitLost(t, lc, "c")
	deadline := time.Now().Add(Timeout)
	for {
		id, _, err := a.Leader(ctx)
		if err == nil && id == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Leader() = %q, %v after every candidate left or withdrew", id, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func testLeaderSessionLoss(t *testing.T, b Backend) {
	ctx := ctxT(t)
	a, bb := newCoord(t, b), newCoord(t, b)
	defer a.Close()
	defer bb.Close()
	la := mustLead(t, campaign(ctx, a, "a:1"), "a")
	chB := campaign(ctx, bb, "b:1")
	notYet(t, chB, "b")
	ring, err := a.Ring(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stale := topo.Fence{Token: la.Token(), Ring: ring}
	// a is cut off until its session expires: b takes over.
	b.Cut(t, a)
	lb := mustLead(t, chB, "b")
	b.Heal(t, a)
	waitLost(t, la, "a")
	// The old leader's decision never lands, the new one's does.
	waitConnected(t, a)
	if _, err := a.Commit(ctx, stale, "a:1", []topo.Assignment{assignment("loss", "v1", "a")}); !errors.Is(err, topo.ErrFenced) {
		t.Fatalf("old leader's Commit = %v, want ErrFenced", err)
	}
	f := fence(t, bb, lb)
	if _, err := bb.Commit(ctx, f, "b:1", []topo.Assignment{assignment("loss", "v1", "b")}); err != nil {
		t.Fatalf("new leader's Commit: %v", err)
	}
	wantAssignments(t, a, assignment("loss", "v1", "b"))
}

func waitConnected(t *testing.T, c topo.Conn) {
	t.Helper()
	deadline := time.Now().Add(Timeout)
	for !c.Connected() {
		if time.Now().After(deadline) {
			t.Fatal("no session after healing")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// fence reads a fence for l as a leader does before deciding.
func fence(t *testing.T, c topo.Coordination, l topo.Leadership) topo.Fence {
	t.Helper()
	ctx := ctxT(t)
	ring, err := c.Ring(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.LastDecision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return topo.Fence{Token: l.Token(), Ring: ring, Epoch: d.Epoch}
}

func assignment(db, version string, holders ...string) topo.Assignment {
	return topo.Assignment{DB: db, Version: version, Strategy: "sequins",
		Replicas: [][]string{holders, holders}, Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func wantAssignments(t *testing.T, c topo.Coordination, want ...topo.Assignment) {
	t.Helper()
	got, err := c.Assignments(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	// Backends may keep earlier tests' assignments: look at these dbs.
	dbs := map[string]bool{}
	for _, a := range want {
		dbs[a.DB] = true
	}
	mine := got[:0]
	for _, a := range got {
		if dbs[a.DB] {
			a.RingVersion, a.Leader = 0, ""
			mine = append(mine, a)
		}
	}
	got = mine
	if len(got) != len(want) || (len(want) > 0 && !reflect.DeepEqual(got, want)) {
		t.Fatalf("Assignments() = %+v, want %+v", got, want)
	}
}

func testCommitEpoch(t *testing.T, b Backend) {
	ctx := ctxT(t)
	a, bb := newCoord(t, b), newCoord(t, b)
	defer a.Close()
	defer bb.Close()
	if _, err := a.LastDecision(ctx); err != nil {
		t.Fatalf("LastDecision(): %v", err)
	}
	la := mustLead(t, campaign(ctx, a, "a:1"), "a")
	lb := campaign(ctx, bb, "b:1")
	notYet(t, lb, "b")
	f := fence(t, a, la)
	d, err := a.Commit(ctx, f, "a:1", []topo.Assignment{assignment("epoch", "v1", "x", "y"), assignment("epoch2", "v9", "z")})
	if err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if d.Epoch != f.Epoch+1 || d.Leader != "a:1" || d.LeaderToken != la.Token() || d.RingVersion != f.Ring.Version {
		t.Fatalf("Commit's decision = %+v from fence %+v", d, f)
	}
	if last, err := bb.LastDecision(ctx); err != nil || last.Epoch != d.Epoch || last.Leader != "a:1" {
		t.Fatalf("LastDecision() = %+v, %v; want %+v", last, err, d)
	}
	wantAssignments(t, bb, assignment("epoch", "v1", "x", "y"), assignment("epoch2", "v9", "z"))
	// The same fence again: another decision landed since.
	if _, err := a.Commit(ctx, f, "a:1", []topo.Assignment{assignment("epoch", "v1", "q")}); !errors.Is(err, topo.ErrFenced) {
		t.Fatalf("Commit on a stale epoch = %v, want ErrFenced", err)
	}
	// A candidate that does not lead cannot commit, even with the
	// leader's token and a fresh epoch.
	f = fence(t, a, la)
	if _, err := bb.Commit(ctx, f, "b:1", []topo.Assignment{assignment("epoch", "v1", "q")}); !errors.Is(err, topo.ErrFenced) {
		t.Fatalf("Commit by a follower = %v, want ErrFenced", err)
	}
	// An update of an existing assignment lands.
	if _, err := a.Commit(ctx, f, "a:1", []topo.Assignment{assignment("epoch", "v1", "y", "z")}); err != nil {
		t.Fatal(err)
	}
	wantAssignments(t, bb, assignment("epoch", "v1", "y", "z"), assignment("epoch2", "v9", "z"))
	if _, err := a.Commit(ctx, fence(t, a, la), "a:1", []topo.Assignment{{DB: "epoch", Version: "../x", Replicas: [][]string{{"a"}}}}); !errors.Is(err, topo.ErrBadName) {
		t.Fatalf("Commit of a bad name = %v, want ErrBadName", err)
	}
}

func testCommitRing(t *testing.T, b Backend) {
	ctx := ctxT(t)
	a, n1, n2 := newCoord(t, b), newCoord(t, b), newCoord(t, b)
	defer a.Close()
	defer n1.Close()
	defer n2.Close()
	for i, c := range []topo.Conn{a, n1} {
		if err := c.RegisterNode(ctx, topo.Node{ID: fmt.Sprint(i), Addr: fmt.Sprintf("127.0.0.1:%d", 7100+i)}); err != nil {
			t.Fatal(err)
		}
	}
	la := mustLead(t, campaign(ctx, a, "a:1"), "a")
	f := fence(t, a, la)
	if want := []string{"127.0.0.1:7100@127.0.0.1:7100", "127.0.0.1:7101@127.0.0.1:7101"}; !reflect.DeepEqual(f.Ring.Nodes, want) {
		t.Fatalf("Ring().Nodes = %v, want %v", f.Ring.Nodes, want)
	}
	if got := f.Ring.ShardIDs(); !reflect.DeepEqual(got, []string{"127.0.0.1:7100", "127.0.0.1:7101"}) {
		t.Fatalf("ShardIDs() = %v", got)
	}
	// A node joins: the ring version grows and the old fence fails.
	if err := n2.RegisterNode(ctx, topo.Node{ID: "2", Addr: "127.0.0.1:7102", ShardID: "s2"}); err != nil {
		t.Fatal(err)
	}
	f2 := fence(t, a, la)
	if f2.Ring.Version <= f.Ring.Version || len(f2.Ring.Nodes) != 3 {
		t.Fatalf("after a join, ring %+v from %+v", f2.Ring, f.Ring)
	}
	if _, err := a.Commit(ctx, f, "a:1", []topo.Assignment{assignment("ring", "v1", "x")}); !errors.Is(err, topo.ErrFenced) {
		t.Fatalf("Commit from the ring before a join = %v, want ErrFenced", err)
	}
	// A node leaves: the same.
	n1.Close()
	if _, err := a.Commit(ctx, f2, "a:1", []topo.Assignment{assignment("ring", "v1", "x")}); !errors.Is(err, topo.ErrFenced) {
		t.Fatalf("Commit from the ring before a leave = %v, want ErrFenced", err)
	}
	f3 := fence(t, a, la)
	if f3.Ring.Version <= f2.Ring.Version || len(f3.Ring.Nodes) != 2 {
		t.Fatalf("after a leave, ring %+v from %+v", f3.Ring, f2.Ring)
	}
	if _, err := a.Commit(ctx, f3, "a:1", []topo.Assignment{assignment("ring", "v1", "x")}); err != nil {
		t.Fatal(err)
	}
	wantAssignments(t, a, assignment("ring", "v1", "x"))
}

// testTwoLeaders races two would-be leaders, each with a decision made
// from its own ring version: exactly one decision lands.
func testTwoLeaders(t *testing.T, b Backend) {
	ctx := ctxT(t)
	a, bb, n := newCoord(t, b), newCoord(t, b), newCoord(t, b)
	defer a.Close()
	defer bb.Close()
	defer n.Close()
	la := mustLead(t, campaign(ctx, a, "a:1"), "a")
	chB := campaign(ctx, bb, "b:1")
	notYet(t, chB, "b")
	fa := fence(t, a, la) // a decided from the ring before n joined
	if err := n.RegisterNode(ctx, topo.Node{ID: "n", Addr: "127.0.0.1:7200"}); err != nil {
		t.Fatal(err)
	}
	// a loses its session while it decides; b takes over and decides from
	// the newer ring.
	b.Cut(t, a)
	lb := mustLead(t, chB, "b")
	fb := fence(t, bb, lb)
	if fb.Ring.Version <= fa.Ring.Version {
		t.Fatalf("b's ring version %d is not newer than a's %d", fb.Ring.Version, fa.Ring.Version)
	}
	b.Heal(t, a)
	waitConnected(t, a)
	var (
		wg     sync.WaitGroup
		errs   [2]error
		fences = [2]topo.Fence{fa, fb}
		conns  = [2]topo.Coordination{a, bb}
		ids    = [2]string{"a:1", "b:1"}
	)
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = conns[i].Commit(ctx, fences[i], ids[i], []topo.Assignment{assignment("two", "v1", ids[i])})
		}()
	}
	wg.Wait()
	if !errors.Is(errs[0], topo.ErrFenced) || errs[1] != nil {
		t.Fatalf("Commit results: old leader %v (want ErrFenced), new leader %v (want nil)", errs[0], errs[1])
	}
	wantAssignments(t, a, assignment("two", "v1", "b:1"))
	if d, err := a.LastDecision(ctx); err != nil || d.Leader != "b:1" || d.RingVersion != fb.Ring.Version {
		t.Fatalf("LastDecision() = %+v, %v", d, err)
	}
}
