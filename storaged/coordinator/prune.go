package coordinator

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"go.uber.org/zap"

	"spangle/shared/dbver"
	"spangle/shared/topo"
)

// superseded returns the versions whose entries the leader may delete,
// sorted: for every db with a version complete under minReplication,
// the older versions that no node publishes any partition of, and the
// older versions an assignment names that the map does not hold (their
// entry already gone, or never given its info). The newest complete
// version and anything newer are never among them, so neither is a
// db's newest version, nor a db's pinned version.
func superseded(m *topo.Map, as []topo.Assignment, minReplication int) []dbver.Version {
	served := map[string]string{} // db -> its newest complete version
	var out []dbver.Version
	for _, db := range m.DBNames() {
		newest := m.NewestComplete(db, minReplication)
		if newest == "" {
			continue
		}
		served[db] = newest
		for _, name := range m.VersionNames(db) {
			// A pinned version is never pruned, however long unserved:
			// nodes load it again while the pin is in force.
			if name < newest && name != m.PinOf(db).Version && unserved(m.Version(db, name)) {
				out = append(out, dbver.Of(db, name))
			}
		}
	}
	for _, a := range as {
		if newest := served[a.DB]; newest != "" && a.Version < newest && a.Version != m.PinOf(a.DB).Version && m.Version(a.DB, a.Version) == nil {
			out = append(out, dbver.Of(a.DB, a.Version))
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].DB != out[j].DB {
			return out[i].DB < out[j].DB
		}
		return out[i].Version < out[j].Version
	})
	return out
}

// unserved reports whether no node publishes any partition of v.
func unserved(v *topo.Version) bool {
	for _, r := range v.Replicas {
		if len(r) > 0 {
			return false
		}
	}
	return true
}

// prune deletes the entries of the versions superseded has found in
// every round for PruneAfter, as this leader saw them: a replica that
// comes back meanwhile starts the wait again, and the service itself
// refuses to delete a version that has one at the moment of the delete.
// It returns the errors of the deletions it tried; the others are tried
// again next round.
func (c *Coordinator) prune(ctx context.Context, m *topo.Map, as []topo.Assignment, st *leaderState, now time.Time) error {
	due := superseded(m, as, c.opts.MinReplication)
	seen := make(map[dbver.Version]bool, len(due))
	for _, k := range due {
		seen[k] = true
	}
	for k := range st.unservedSince {
		if !seen[k] {
			delete(st.unservedSince, k) // served again, or gone
		}
	}
	var errs []error
	for _, k := range due {
		since, ok := st.unservedSince[k]
		if !ok {
			st.unservedSince[k] = now
			continue
		}
		if now.Sub(since) < c.opts.PruneAfter {
			continue
		}
		gone, err := c.opts.Coord.PruneVersion(ctx, k.DB, k.Version)
		if err != nil {
			errs = append(errs, fmt.Errorf("coordinator: pruning %s/%s: %w", k.DB, k.Version, err))
			if errors.Is(err, topo.ErrUnavailable) || errors.Is(err, topo.ErrClosed) || ctx.Err() != nil {
				break // the rest would fail alike
			}
			continue
		}
		// Pruned or served again: either way, a new wait if it is ever
		// found unserved again (a stale map may still show it once).
		delete(st.unservedSince, k)
		if gone {
			c.log.Info("version pruned: superseded and unserved",
				zap.String("db", k.DB), zap.String("version", k.Version),
				zap.String("served", m.NewestComplete(k.DB, c.opts.MinReplication)),
				zap.Duration("unserved_for", now.Sub(since)))
		} else {
			c.log.Debug("version not pruned: a replica was published meanwhile",
				zap.String("db", k.DB), zap.String("version", k.Version))
		}
	}
	return errors.Join(errs...)
}
