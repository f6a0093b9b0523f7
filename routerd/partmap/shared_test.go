package partmap

import (
	"fmt"
	"testing"

	"spangle/shared/topo"
)

// TestSharedDBsCarriedOver: maps that share untouched dbs' versions (as
// zktopo publishes them) give the same answers as maps built afresh: a
// db's new version, a pin published for a db whose versions did not
// change, and an unpin are each seen, and the other dbs keep theirs.
func TestSharedDBsCarriedOver(t *testing.T) {
	for _, shared := range []bool{true, false} {
		t.Run(fmt.Sprintf("shared=%v", shared), func(t *testing.T) {
			mir := topo.NewMirror()
			tb := New(mir, Options{})
			m := manyDBs(20)
			mir.Publish(m)
			want := func(step string, served map[string]string, pin string) {
				t.Helper()
				s := tb.Current()
				for i := 0; i < 20; i++ {
					db := fmt.Sprintf("db-%04d", i)
					w, ok := served[db]
					if !ok {
						w = "v2"
					}
					if got := s.Served(db); got != w {
						t.Fatalf("%s: %s serves %q, want %q", step, db, got, w)
					}
				}
				if got := s.Pin("db-0005"); got != pin {
					t.Fatalf("%s: db-0005 pinned to %q, want %q", step, got, pin)
				}
			}
			want("start", nil, "")

			next := func(m *topo.Map) *topo.Map {
				if shared {
					return m
				}
				return rebuilt(m)
			}
			m = next(withVersion(m, "db-0003", "v3"))
			mir.Publish(m)
			want("db-0003 gets v3", map[string]string{"db-0003": "v3"}, "")

			pinned := &topo.Map{Nodes: m.Nodes, DBs: m.DBs, Pins: map[string]topo.Pin{"db-0005": {Version: "v1", Generation: 1}}}
			mir.Publish(next(pinned))
			want("db-0005 pinned to v1", map[string]string{"db-0003": "v3", "db-0005": "v1"}, "v1")

			unpinned := &topo.Map{Nodes: m.Nodes, DBs: m.DBs, Pins: map[string]topo.Pin{"db-0005": {Generation: 2}}}
			mir.Publish(next(unpinned))
			want("db-0005 unpinned", map[string]string{"db-0003": "v3"}, "")
		})
	}
}

// rebuilt is m with every db's versions in new maps: a backend that
// shares nothing between maps.
func rebuilt(m *topo.Map) *topo.Map {
	out := &topo.Map{Nodes: m.Nodes, DBs: map[string]map[string]*topo.Version{}, Pins: m.Pins}
	for db, vs := range m.DBs {
		cp := map[string]*topo.Version{}
		for v, ver := range vs {
			cp[v] = ver
		}
		out.DBs[db] = cp
	}
	return out
}
