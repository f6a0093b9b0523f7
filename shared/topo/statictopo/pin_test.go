package statictopo

import (
	"testing"

	"spangle/shared/topo"
	"spangle/shared/wire"
)

// The pin of the greatest generation any node reports wins: the latest
// step of the marker, whichever node took it last; bad names are skipped.
func TestLatestPins(t *testing.T) {
	node := func(pin string, gen uint64) *wire.NodeStatus {
		return &wire.NodeStatus{DBs: map[string]wire.DBStatus{"db": {Pin: pin, PinGeneration: gen}}}
	}
	for _, tc := range []struct {
		name  string
		nodes []*wire.NodeStatus
		want  topo.Pin
	}{
		{"never pinned", []*wire.NodeStatus{node("", 0), node("", 0)}, topo.Pin{}},
		{"one node pinned first", []*wire.NodeStatus{node("", 0), node("v1", 100)}, topo.Pin{Version: "v1", Generation: 100}},
		{"one node unpinned last", []*wire.NodeStatus{node("", 300), node("v1", 100)}, topo.Pin{Generation: 300}},
		{"a bad name", []*wire.NodeStatus{node("../v1", 500), node("v1", 100)}, topo.Pin{Version: "v1", Generation: 100}},
	} {
		pins := map[string]topo.Pin{}
		for _, n := range tc.nodes {
			latestPins(pins, n)
		}
		if got := pins["db"]; got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// A live node's reason for not following a db's _PIN reaches the map, so
// that routerd's status shows it too.
func TestPinErrorsReachTheMap(t *testing.T) {
	var b topo.Builder
	bad := &wire.NodeStatus{DBs: map[string]wire.DBStatus{"db": {PinError: `pinned version "bogus" is not in the source`}, "ok": {}}}
	pinErrors(&b, bad)
	pinErrors(&b, bad) // a second node saying the same
	m := b.Build(1)
	if got := m.PinErrors["db"]; got != `pinned version "bogus" is not in the source` {
		t.Errorf("PinErrors[db] = %q", got)
	}
	if _, ok := m.PinErrors["ok"]; ok || len(m.PinErrors) != 1 {
		t.Errorf("PinErrors = %v", m.PinErrors)
	}
}
