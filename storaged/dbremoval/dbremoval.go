package dbremoval

import (
	"context"
	"sync"

	"go.uber.org/zap"
)

// Hook lets the cluster forget db; it reports whether the cluster is
// done with it. false or an error calls it again at the next scan. It
// must return when ctx ends.
type Hook func(ctx context.Context, db string) (bool, error)

// removal is what the Tracker remembers of a db removed from the source
// until the hook reports the cluster done with it. Guarded by Tracker.mu.
type removal struct {
	tried   bool // the hook was called at least once
	running bool // a call is under way
	back    bool // the source listed the db again while a call ran
}

// Tracker remembers the dbs removed from the source until the cluster
// has forgotten them. A nil *Tracker (no hook: standalone) does nothing.
type Tracker struct {
	hook Hook
	log  *zap.Logger
	wg   *sync.WaitGroup

	mu      sync.Mutex // guards removed
	removed map[string]*removal
}

// New returns a Tracker calling hook, or nil when hook is nil. The calls
// it starts join wg, so that whoever waits for wg waits for them.
func New(hook Hook, log *zap.Logger, wg *sync.WaitGroup) *Tracker {
	if hook == nil {
		return nil
	}
	if log == nil {
		log = zap.NewNop()
	}
	return &Tracker{hook: hook, log: log, wg: wg, removed: map[string]*removal{}}
}

// Removed remembers that db left the source.
func (t *Tracker) Removed(db string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if r := t.removed[db]; r != nil {
		r.tried, r.back = false, false
		return
	}
	t.removed[db] = &removal{}
}

// Check calls the hook for the dbs removed from the source that have no
// version left on this node (empty says which; it is called with the
// Tracker's lock held and must not call the Tracker). A sweep calls it
// with scan false: a db is tried once, as soon as its last version is
// gone. A scan calls it with the dbs the source lists and scan true:
// those are forgotten, and the others are tried again until the hook
// reports them done. ctx is the one the hook gets (nil: Background).
func (t *Tracker) Check(ctx context.Context, listed map[string]bool, scan bool, empty func(db string) bool) {
	if t == nil {
		return
	}
	if ctx == nil {
		ctx = context.Background()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for db, r := range t.removed {
		if listed[db] {
			if r.running {
				r.back = true
			} else {
				delete(t.removed, db)
			}
			continue
		}
		if r.running || r.tried && !scan {
			continue
		}
		if !empty(db) {
			continue // still withdrawing
		}
		r.running, r.tried = true, true
		t.wg.Add(1)
		go func() {
			defer t.wg.Done()
			t.call(ctx, db, r)
		}()
	}
}

// call calls the hook for db and forgets db once the hook reports it
// done.
func (t *Tracker) call(ctx context.Context, db string, r *removal) {
	done, err := t.hook(ctx, db)
	t.mu.Lock()
	defer t.mu.Unlock()
	r.running = false
	if t.removed[db] != r {
		return
	}
	if r.back {
		delete(t.removed, db) // served again: nothing more to forget
		return
	}
	switch {
	case err != nil:
		if ctx.Err() == nil {
			t.log.Warn("db removed from the source: the cluster could not forget it yet; trying again at the next scan",
				zap.String("db", db), zap.Error(err))
		}
	case done:
		delete(t.removed, db)
	default:
		t.log.Debug("db removed from the source: the cluster still holds some of it; looking again at the next scan",
			zap.String("db", db))
	}
}
