package partmap

import (
	"testing"
	"time"

	"spangle/shared/topo"
)

// build makes a map from db -> version -> replicas per partition.
func build(dbs map[string]map[string][][]string) *topo.Map {
	var b topo.Builder
	for db, vs := range dbs {
		for v, parts := range vs {
			b.AddVersion(db, v, topo.VersionInfo{NumPartitions: len(parts), Created: time.Unix(1, 0)})
			for p, reps := range parts {
				for _, a := range reps {
					b.AddNode(topo.Node{Addr: a, ShardID: a})
					b.AddReplica(db, v, p, a)
				}
			}
		}
	}
	return b.Build(0)
}

func TestVersionRules(t *testing.T) {
	type step struct {
		name string
		dbs  map[string]map[string][][]string
		want map[string]string
	}
	steps := []step{
		{"empty", nil, map[string]string{}},
		{"incomplete first version is not served",
			map[string]map[string][][]string{"a": {"v1": {{"n1"}, {}}}},
			map[string]string{}},
		{"complete first version is served",
			map[string]map[string][][]string{"a": {"v1": {{"n1"}, {"n2"}}}},
			map[string]string{"a": "v1"}},
		{"newer incomplete version waits",
			map[string]map[string][][]string{"a": {"v1": {{"n1"}, {"n2"}}, "v2": {{"n1"}, {}}}},
			map[string]string{"a": "v1"}},
		{"newer complete version switches",
			map[string]map[string][][]string{"a": {"v1": {{"n1"}, {"n2"}}, "v2": {{"n1"}, {"n2"}}}},
			map[string]string{"a": "v2"}},
		{"served version losing replicas stays served",
			map[string]map[string][][]string{"a": {"v1": {{"n1"}, {"n2"}}, "v2": {{"n1"}, {}}}},
			map[string]string{"a": "v2"}},
		{"newest version vanishing never brings back an older one",
			map[string]map[string][][]string{"a": {"v1": {{"n1"}, {"n2"}}}},
			map[string]string{"a": "v2"}},
		{"db gone is not served",
			map[string]map[string][][]string{"b": {"x": {{"n1"}}}},
			map[string]string{"b": "x"}},
		{"db back with older versions only keeps its floor",
			map[string]map[string][][]string{"a": {"v1": {{"n1"}, {"n2"}}}, "b": {"x": {{"n1"}}}},
			map[string]string{"a": "v2", "b": "x"}},
		{"db back with newer version switches",
			map[string]map[string][][]string{"a": {"v3": {{"n1"}}}, "b": {"x": {{"n1"}}}},
			map[string]string{"a": "v3", "b": "x"}},
	}
	mir := topo.NewMirror()
	tab := New(mir, Options{})
	for _, st := range steps {
		mir.Publish(build(st.dbs))
		s := tab.Current()
		got := s.ServedAll()
		if len(got) != len(st.want) {
			t.Fatalf("%s: served %v, want %v", st.name, got, st.want)
		}
		for db, v := range st.want {
			if got[db] != v || s.Served(db) != v {
				t.Fatalf("%s: served %v, want %v", st.name, got, st.want)
			}
		}
		if s.Map != mir.Map() {
			t.Fatalf("%s: state not built from the latest map", st.name)
		}
	}
}

func TestMinReplication(t *testing.T) {
	mir := topo.NewMirror()
	tab := New(mir, Options{MinReplication: 2})
	mir.Publish(build(map[string]map[string][][]string{"a": {"v1": {{"n1", "n2"}, {"n2"}}}}))
	if v := tab.Current().Served("a"); v != "" {
		t.Fatalf("served %q with one replica of partition 1, want none", v)
	}
	mir.Publish(build(map[string]map[string][][]string{"a": {"v1": {{"n1", "n2"}, {"n1", "n2"}}}}))
	if v := tab.Current().Served("a"); v != "v1" {
		t.Fatalf("served %q, want v1", v)
	}
}

func TestStaleMapNeverGoesBack(t *testing.T) {
	mir := topo.NewMirror()
	tab := New(mir, Options{})
	mir.Publish(build(map[string]map[string][][]string{"a": {"v1": {{"n1"}}}}))
	old := mir.Map()
	mir.Publish(build(map[string]map[string][][]string{"a": {"v1": {{"n1"}}, "v2": {{"n1"}}}}))
	if v := tab.Current().Served("a"); v != "v2" {
		t.Fatalf("served %q, want v2", v)
	}
	// xds may hand an older map: the choice stays at v2.
	if got := tab.Served(old); got["a"] != "v2" {
		t.Fatalf("Served(old map) = %v, want a=v2", got)
	}
}

func TestSwitchCallbackAndStates(t *testing.T) {
	mir := topo.NewMirror()
	var switches []string
	tab := New(mir, Options{OnSwitch: func(db, from, to string) { switches = append(switches, db+":"+from+">"+to) }})
	mir.Publish(build(map[string]map[string][][]string{"a": {"v1": {{"n1"}}, "v2": {{"n1"}}, "v3": {{}}}}))
	s := tab.Current()
	tab.Current() // same revision: no rebuild, no second callback
	if len(switches) != 1 || switches[0] != "a:>v2" {
		t.Fatalf("switches %v", switches)
	}
	for v, want := range map[string]string{"v1": "REMOVING", "v2": "ACTIVE", "v3": "BUILDING"} {
		if got := s.VersionState("a", v); got != want {
			t.Errorf("state of %s = %s, want %s", v, got, want)
		}
	}
}

// The leader prunes a superseded version once no node serves it: the
// served version stays, and no switch is reported.
func TestOlderVersionPruned(t *testing.T) {
	mir := topo.NewMirror()
	var switches []string
	tab := New(mir, Options{OnSwitch: func(db, from, to string) { switches = append(switches, db+":"+from+">"+to) }})
	for _, dbs := range []map[string]map[string][][]string{
		{"a": {"v1": {{"n1"}}, "v2": {{"n1"}}}},
		{"a": {"v1": {{}}, "v2": {{"n1"}}}}, // every node dropped v1
		{"a": {"v2": {{"n1"}}}},             // v1 pruned
		{"a": {"v2": {{}}}},                 // v2 loses its replica for a while
		{"a": {"v2": {{"n1"}}}},
	} {
		mir.Publish(build(dbs))
		s := tab.Current()
		if got := s.ServedAll(); len(got) != 1 || got["a"] != "v2" {
			t.Fatalf("map %v: served %v, want a=v2", dbs, got)
		}
	}
	if len(switches) != 1 || switches[0] != "a:>v2" {
		t.Fatalf("switches %v, want only the first", switches)
	}
}

func BenchmarkCurrent(b *testing.B) {
	mir := topo.NewMirror()
	tab := New(mir, Options{})
	mir.Publish(build(map[string]map[string][][]string{"a": {"v1": {{"n1"}}}}))
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if tab.Current().Served("a") != "v1" {
				b.Fatal("wrong version")
			}
		}
	})
}
