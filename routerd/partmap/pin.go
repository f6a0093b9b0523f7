package partmap

import (
	"go.uber.org/zap"

	"spangle/shared/topo"
)

// The pin rule. A pin (pins/<db> in the map, written by the leader from
// the db's _PIN marker) carries a generation that grows with every pin
// and unpin. The Table remembers, per db, the greatest generation it has
// acted on (its step). A pin of a greater generation is the one step
// back that monotonic reads allow:
//
//   - a pin to version P, once P is complete: the served version becomes
//     P at once for every reader (one State swap), newer or older, and
//     then stays P, whatever newer version completes, until an unpin of
//     a greater generation. While P is not complete yet, the served
//     version stays what it was and does not move forward either (the
//     db is frozen; a routerd that served nothing of it yet serves the
//     newest complete version meanwhile): the step is taken once P
//     completes.
//   - an unpin: the served version moves forward from P to the newest
//     complete version, and from then on only forward, as without pins.
//
// A pin of a generation not greater than the step is one already taken
// (or an older leader's): it changes nothing. So every routerd, whatever
// order it sees the maps in, switches once per step and never flaps.

// step is the last pin step a Table took for a db.
type step struct {
	generation uint64
	pinned     string // the version in force; "" after an unpin
}

// PinState is what a State says of a db's pin, for the answer's header
// and the status page.
type PinState struct {
	// Pinned is the version the db is held at; "" when unpinned.
	Pinned string `json:"pinned,omitempty"`
	// Generation is the generation of the last step taken.
	Generation uint64 `json:"generation"`
	// Pending is a newer pin not taken yet, because its version is not
	// complete: the served version is frozen meanwhile.
	Pending *topo.Pin `json:"pending,omitempty"`
}

// Pin returns the version a pin holds db at, or "" when none does. An
// answer from a pinned db carries it (wire.HeaderPin).
func (s *State) Pin(db string) string { return s.pins[db].Pinned }

// PinOf returns db's pin state, zero when no pin was ever published.
func (s *State) PinOf(db string) PinState { return s.pins[db] }

// nextLocked applies the pin rule and the forward rule to db and returns
// the version to serve (the new floor); it records db's pin state in s.
func (t *Table) nextLocked(m *topo.Map, db string, s *State) string {
	cur := t.floor[db]
	st := t.steps[db]
	p, published := m.Pins[db]
	var pending *topo.Pin
	if published && p.Generation > st.generation {
		switch {
		case p.Version == "":
			st = step{generation: p.Generation}
			t.opts.Logger.Info("partmap: unpinned; moving forward", zap.String("db", db),
				zap.String("from", cur), zap.Uint64("generation", p.Generation))
		case m.Version(db, p.Version).Complete(t.opts.MinReplication):
			st = step{generation: p.Generation, pinned: p.Version}
			t.opts.Logger.Info("partmap: pinned", zap.String("db", db), zap.String("from", cur),
				zap.String("to", p.Version), zap.Uint64("generation", p.Generation))
			cur = p.Version
		default:
			pending = &p
		}
		t.steps[db] = st
	}
	if published || st.generation > 0 {
		if s.pins == nil {
			s.pins = map[string]PinState{}
		}
		s.pins[db] = PinState{Pinned: st.pinned, Generation: st.generation, Pending: pending}
	}
	if st.pinned != "" || (pending != nil && cur != "") {
		return cur
	}
	if v := m.NewestComplete(db, t.opts.MinReplication); v > cur {
		return v
	}
	return cur
}
