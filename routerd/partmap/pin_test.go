package partmap

import (
	"slices"
	"testing"

	"spangle/shared/topo"
)

// withPin returns m with db's pin set.
func withPin(m *topo.Map, db, version string, gen uint64) *topo.Map {
	m.Pins = map[string]topo.Pin{db: {Version: version, Generation: gen}}
	return m
}

// The pin rule: a pin of a greater generation switches to its version
// once complete (back or forward), holds it against newer versions, and
// an unpin moves forward again; a generation already taken, or an older
// one, changes nothing; an incomplete pinned version freezes the db.
func TestPinRule(t *testing.T) {
	full := [][]string{{"n1"}, {"n2"}}
	half := [][]string{{"n1"}, {}}
	type vs = map[string][][]string
	steps := []struct {
		name    string
		dbs     vs
		pin     *topo.Pin
		want    string
		wantPin string
	}{
		{"newest served", vs{"v1": full, "v2": full}, nil, "v2", ""},
		{"pin back to v1", vs{"v1": full, "v2": full}, &topo.Pin{Version: "v1", Generation: 1}, "v1", "v1"},
		{"a newer version does not move a pinned db", vs{"v1": full, "v2": full, "v3": full}, &topo.Pin{Version: "v1", Generation: 1}, "v1", "v1"},
		{"the pinned version losing replicas stays", vs{"v1": half, "v3": full}, &topo.Pin{Version: "v1", Generation: 1}, "v1", "v1"},
		{"unpin moves forward", vs{"v1": full, "v3": full}, &topo.Pin{Generation: 2}, "v3", ""},
		{"a map still showing the old pin changes nothing", vs{"v1": full, "v3": full}, &topo.Pin{Version: "v1", Generation: 1}, "v3", ""},
		{"a map without the pin changes nothing", vs{"v1": full, "v3": full}, nil, "v3", ""},
		{"a pin to an incomplete version freezes", vs{"v0": half, "v3": full, "v4": full}, &topo.Pin{Version: "v0", Generation: 3}, "v3", ""},
		{"then switches once it completes", vs{"v0": full, "v3": full, "v4": full}, &topo.Pin{Version: "v0", Generation: 3}, "v0", "v0"},
		{"a freeze: a pin to the newer served version", vs{"v0": full, "v4": full}, &topo.Pin{Version: "v4", Generation: 4}, "v4", "v4"},
		{"frozen against a newer version", vs{"v4": full, "v5": full}, &topo.Pin{Version: "v4", Generation: 4}, "v4", "v4"},
		{"unpin", vs{"v4": full, "v5": full}, &topo.Pin{Generation: 5}, "v5", ""},
		{"no step back without a pin", vs{"v4": full}, &topo.Pin{Generation: 5}, "v5", ""},
	}
	mir := topo.NewMirror()
	var switches []string
	tab := New(mir, Options{OnSwitch: func(db, from, to string) { switches = append(switches, from+">"+to) }})
	for _, st := range steps {
		m := build(map[string]map[string][][]string{"a": st.dbs})
		if st.pin != nil {
			m = withPin(m, "a", st.pin.Version, st.pin.Generation)
		}
		mir.Publish(m)
		s := tab.Current()
		if got := s.Served("a"); got != st.want {
			t.Fatalf("%s: served %q, want %q", st.name, got, st.want)
		}
		if got := s.Pin("a"); got != st.wantPin {
			t.Fatalf("%s: pin %q, want %q", st.name, got, st.wantPin)
		}
	}
	want := []string{">v2", "v2>v1", "v1>v3", "v3>v0", "v0>v4", "v4>v5"}
	if !slices.Equal(switches, want) {
		t.Fatalf("switches %v, want %v", switches, want)
	}
}

// A routerd that starts while a pin is in force serves the pinned
// version at once; with a pin not complete yet it serves the newest
// complete version meanwhile, and shows the pin pending.
func TestPinAtStart(t *testing.T) {
	mir := topo.NewMirror()
	m := build(map[string]map[string][][]string{"a": {"v1": {{"n1"}}, "v2": {{"n1"}}, "v3": {{}}}})
	mir.Publish(withPin(m, "a", "v1", 7))
	tab := New(mir, Options{})
	if s := tab.Current(); s.Served("a") != "v1" || s.PinOf("a").Generation != 7 {
		t.Fatalf("served %q, pin %+v", s.Served("a"), s.PinOf("a"))
	}
	mir2 := topo.NewMirror()
	m = build(map[string]map[string][][]string{"a": {"v2": {{"n1"}}, "v3": {{}}}})
	mir2.Publish(withPin(m, "a", "v3", 7))
	s := New(mir2, Options{}).Current()
	if s.Served("a") != "v2" || s.PinOf("a").Pending == nil || s.PinOf("a").Pending.Version != "v3" {
		t.Fatalf("an incomplete pin at start: served %q, pin %+v", s.Served("a"), s.PinOf("a"))
	}
}
