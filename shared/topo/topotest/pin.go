package topotest

import (
	"errors"
	"testing"

	"spangle/shared/topo"
)

// testPins checks SetPin: a leader's pin reaches every session's Map; generations only grow (a repeated or older one is fenced);
// an unpin keeps its generation in the Map; a candidate that does not
// lead writes nothing; bad names are refused.
func testPins(t *testing.T, b Backend) {
	ctx := ctxT(t)
	a, bb := newCoord(t, b), newCoord(t, b)
	defer a.Close()
	defer bb.Close()
	w := b.NewConn(t) // a third session, as a router's watcher has
	defer w.Close()
	la := mustLead(t, campaign(ctx, a, "a:1"), "a")
	lb := campaign(ctx, bb, "b:1")
	notYet(t, lb, "b")
	hasPin := func(p topo.Pin) func(*topo.Map) bool {
		return func(m *topo.Map) bool { return m.PinOf("pinned") == p }
	}
	if got := w.Map().PinOf("pinned"); got != (topo.Pin{}) {
		t.Fatalf("a pin before any was set: %+v", got)
	}
	p1 := topo.Pin{Version: "v1", Generation: 1}
	if err := a.SetPin(ctx, la.Token(), "pinned", p1); err != nil {
		t.Fatalf("SetPin: %v", err)
	}
	WaitMap(t, w, "the pin in a watcher's map", hasPin(p1))
	WaitMap(t, bb, "the pin in another node's map", hasPin(p1))
	for _, stale := range []topo.Pin{{Version: "v2", Generation: 1}, {Version: "v0", Generation: 0}} {
		if err := a.SetPin(ctx, la.Token(), "pinned", stale); !errors.Is(err, topo.ErrFenced) {
			t.Fatalf("SetPin(%+v) after generation 1 = %v, want ErrFenced", stale, err)
		}
	}
	if err := bb.SetPin(ctx, la.Token(), "pinned", topo.Pin{Version: "v3", Generation: 9}); !errors.Is(err, topo.ErrFenced) {
		t.Fatalf("SetPin with another session's token = %v, want ErrFenced", err)
	}
	if err := bb.SetPin(ctx, "n_0000000999", "pinned", topo.Pin{Version: "v3", Generation: 9}); !errors.Is(err, topo.ErrFenced) {
		t.Fatalf("SetPin by a non-leader = %v, want ErrFenced", err)
	}
	unpin := topo.Pin{Generation: 2}
	if err := a.SetPin(ctx, la.Token(), "pinned", unpin); err != nil {
		t.Fatalf("unpinning: %v", err)
	}
	m := WaitMap(t, w, "the unpin in a watcher's map", hasPin(unpin))
	if _, ok := m.Pins["pinned"]; !ok {
		t.Fatal("an unpin is not kept in the map")
	}
	for _, bad := range []struct {
		db string
		p  topo.Pin
	}{{"bad/db", topo.Pin{Generation: 5}}, {"pinned", topo.Pin{Version: "../x", Generation: 5}},
		{"pinned", topo.Pin{Version: "v1", Generation: topo.MaxPinGeneration + 1}}} {
		if err := a.SetPin(ctx, la.Token(), bad.db, bad.p); !errors.Is(err, topo.ErrBadName) {
			t.Fatalf("SetPin(%q, %+v) = %v, want ErrBadName", bad.db, bad.p, err)
		}
	}
	// The new leader continues from the stored generation.
	if err := la.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	lbb := mustLead(t, lb, "b")
	p3 := topo.Pin{Version: "v1", Generation: 3}
	if err := bb.SetPin(ctx, lbb.Token(), "pinned", p3); err != nil {
		t.Fatalf("the new leader's SetPin: %v", err)
	}
	WaitMap(t, w, "the new leader's pin", hasPin(p3))
}
