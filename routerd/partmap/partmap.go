package partmap

import (
	"reflect"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"

	"spangle/shared/topo"
	"spangle/shared/wire"
)

// Options configure a Table. Zero values are the documented defaults.
type Options struct {
	// MinReplication is how many live replicas every partition needs
	// before a version is served (default 1).
	MinReplication int
	// Logger records version switches; default no-op.
	Logger *zap.Logger
	// OnSwitch, if set, is called (with the Table's lock held, so keep it
	// short) whenever a db starts serving a new version; from is "" for a
	// db's first version.
	OnSwitch func(db, from, to string)
}

// State is one consistent view for a request: a map and the versions
// served from it. It is immutable and safe to share.
type State struct {
	// Map is the partition map the choice was made from.
	Map    *topo.Map
	served map[string]string
	pins   map[string]PinState // dbs with a pin published, an unpin included
}

// Served returns the version served for db, or "" when db has no
// complete version yet or is gone from the map.
func (s *State) Served(db string) string { return s.served[db] }

// ServedAll returns a copy of db -> served version.
func (s *State) ServedAll() map[string]string {
	out := make(map[string]string, len(s.served))
	for db, v := range s.served {
		out[db] = v
	}
	return out
}

// Table holds the served version of every db. It is safe for concurrent
// use. Its served versions only ever move forward, so a request started
// after an answer from version N of a db is answered from N or newer,
// with one exception: a published pin of a greater generation (see
// pin.go), the one sanctioned step back.
type Table struct {
	w    topo.Watcher
	opts Options

	cur atomic.Pointer[State] // the newest State built; swapped under mu

	mu    sync.Mutex        // serializes rebuilds
	floor map[string]string // guarded by mu; the oldest version unpinned requests may get per db, kept while a db is gone (see pin.go)
	steps map[string]step   // guarded by mu; the last pin step taken per db
}

// New returns a Table following w.
func New(w topo.Watcher, opts Options) *Table {
	if opts.MinReplication < 1 {
		opts.MinReplication = 1
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	t := &Table{w: w, opts: opts, floor: map[string]string{}, steps: map[string]step{}}
	return t
}

// MinReplication is the replication a version needs to be served.
func (t *Table) MinReplication() int { return t.opts.MinReplication }

// Current returns the state for the watcher's latest map. It never
// blocks on the network; it rebuilds the choice only when the map's
// revision moved.
func (t *Table) Current() *State {
	m := t.w.Map()
	if s := t.cur.Load(); s != nil && s.Map == m {
		return s
	}
	return t.advance(m)
}

// Served implements xds/server.VersionChooser: it returns the versions
// routerd serves for m, so that Envoy routes to the same data routerd
// answers from. When m is older than what the Table has already seen,
// the Table's newer choice is returned: it never goes back.
func (t *Table) Served(m *topo.Map) map[string]string {
	return t.advance(m).ServedAll()
}

// advance folds m into the floors and publishes the resulting State,
// unless a State for the same or a newer revision exists. Only the dbs
// that changed since the last State are looked at (unchanged); the
// others' answers are carried over, so one db's new version costs its
// own partitions and a pointer comparison per other db.
func (t *Table) advance(m *topo.Map) *State {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.cur.Load(); s != nil && (s.Map == m || s.Map.Revision > m.Revision) {
		return s
	}
	last := t.cur.Load()
	s := &State{Map: m, served: make(map[string]string, len(m.DBs))}
	for db, vs := range m.DBs {
		if last != nil && unchanged(last.Map, m, db, vs) {
			// The rules below are a function of the db's versions, its
			// pin, its floor and its last step, and the last State left
			// the floor and step where they now give the same answer:
			// carried over, without looking at a partition.
			s.carry(last, db)
			continue
		}
		prev := t.floor[db]
		if v := t.nextLocked(m, db, s); v != prev {
			t.floor[db] = v
			t.opts.Logger.Info("partmap: serving new version",
				zap.String("db", db), zap.String("from", prev), zap.String("to", v),
				zap.Uint64("map_revision", m.Revision), zap.String("pin", s.pins[db].Pinned))
			if t.opts.OnSwitch != nil {
				t.opts.OnSwitch(db, prev, v)
			}
		}
		if v := t.floor[db]; v != "" {
			s.served[db] = v
		}
	}
	t.cur.Store(s)
	return s
}

// unchanged reports whether db, whose versions in m are vs, is as it was
// in last: the same versions object (backends share an untouched db's
// versions between maps, see zktopo's publishMap) and the same pin.
// Another backend's maps share nothing, and every db counts as changed.
func unchanged(last, m *topo.Map, db string, vs map[string]*topo.Version) bool {
	lvs, ok := last.DBs[db]
	if !ok || reflect.ValueOf(lvs).UnsafePointer() != reflect.ValueOf(vs).UnsafePointer() {
		return false
	}
	lp, lok := last.Pins[db]
	p, ok := m.Pins[db]
	return lok == ok && lp == p
}

// carry copies db's served version and pin state from last.
func (s *State) carry(last *State, db string) {
	if v, ok := last.served[db]; ok {
		s.served[db] = v
	}
	if ps, ok := last.pins[db]; ok {
		if s.pins == nil {
			s.pins = map[string]PinState{}
		}
		s.pins[db] = ps
	}
}

// VersionState names the state of one version of a db as routerd sees
// it, in sequins' words: the served version is ACTIVE, older ones (still
// answering requests that pin them) REMOVING, newer ones BUILDING until
// they are complete and served.
func (s *State) VersionState(db, version string) string {
	served := s.served[db]
	switch {
	case served != "" && version == served:
		return wire.StateActive
	case served != "" && version < served:
		return wire.StateRemoving
	default:
		return wire.StateBuilding
	}
}
