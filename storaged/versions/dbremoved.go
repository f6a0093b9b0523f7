package versions

import (
	"context"

	"go.uber.org/zap"
)

// removal is what the manager remembers of a db removed from the source
// until Hooks.DBRemoved reports the cluster done with it (Manager.removed).
// Guarded by Manager.mu.
//
// The order is the point: DBRemoved runs only once every version of the
// db is gone from this node, so after BeforeRemove has withdrawn its
// partitions; the cluster can then delete what is left of the db (in
// cluster mode, its version entries, which only the last node to
// withdraw succeeds in deleting). A failure never blocks the manager: the
// call runs in its own goroutine, one at a time per db, with Run's
// context (it must return when that ends), and is tried again at the next
// scan that still finds the db gone; a db the source lists again is
// forgotten.
//
// Nothing of it survives a restart. A node that restarts after its db
// was removed holds nothing of it, and its entries went with its old
// session; the nodes that stayed up keep trying until the db's entries
// are gone (see storaged/cluster's dbRemoved).
type removal struct {
	tried   bool // DBRemoved was called at least once
	running bool // a call is under way
	back    bool // the source listed the db again while a call ran
}

// markRemovedLocked remembers that db left the source, for
// Hooks.DBRemoved.
func (m *Manager) markRemovedLocked(db string) {
	if m.opts.Hooks.DBRemoved == nil {
		return
	}
	if r := m.removed[db]; r != nil {
		r.tried, r.back = false, false
		return
	}
	m.removed[db] = &removal{}
}

// dbsRemovedLocked calls Hooks.DBRemoved for the dbs removed from the
// source that have no version left on this node. A sweep calls it with
// scan false: a db is tried once, as soon as its last version is gone. A
// scan calls it with the dbs the source lists and scan true: those are
// forgotten, and the others are tried again until DBRemoved reports
// them done.
func (m *Manager) dbsRemovedLocked(listed map[string]bool, scan bool) {
	for db, r := range m.removed {
		if listed[db] {
			if r.running {
				r.back = true
			} else {
				delete(m.removed, db)
			}
			continue
		}
		if r.running || r.tried && !scan {
			continue
		}
		if d := m.dbs[db]; d != nil && len(d.versions) > 0 {
			continue // still withdrawing
		}
		r.running, r.tried = true, true
		ctx := m.ctx
		if ctx == nil {
			ctx = context.Background()
		}
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			m.callDBRemoved(ctx, db, r)
		}()
	}
}

// callDBRemoved calls Hooks.DBRemoved for db and forgets db once the
// hook reports it done.
func (m *Manager) callDBRemoved(ctx context.Context, db string, r *removal) {
	done, err := m.opts.Hooks.DBRemoved(ctx, db)
	m.mu.Lock()
	defer m.mu.Unlock()
	r.running = false
	if m.removed[db] != r {
		return
	}
	if r.back {
		delete(m.removed, db) // served again: nothing more to forget
		return
	}
	switch {
	case err != nil:
		if ctx.Err() == nil {
			m.log.Warn("db removed from the source: the cluster could not forget it yet; trying again at the next scan",
				zap.String("db", db), zap.Error(err))
		}
	case done:
		delete(m.removed, db)
	default:
		m.log.Debug("db removed from the source: the cluster still holds some of it; looking again at the next scan",
			zap.String("db", db))
	}
}
