package coordinator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"

	"go.uber.org/zap"

	"spangle/shared/source"
	"spangle/shared/topo"
)

// PinStatus is the leader's view of one db's _PIN marker.
type PinStatus struct {
	// Published is the pin in force in the cluster (pins/<db>).
	Published topo.Pin `json:"published"`
	// Error says why the marker is not published: malformed, unreadable,
	// or naming a version the source does not hold. What is served stays.
	Error string `json:"error,omitempty"`
}

// publishPins is the leader's part of _PIN: it reads every db's marker
// from the source and publishes what changed as pins/<db>, with a
// generation one above the published one, so that every node and router
// takes the same step. A marker that cannot be read or parsed, or that
// names a version the source does not list, changes nothing. It records
// what it saw for the status page and returns the errors of its writes.
func (c *Coordinator) publishPins(ctx context.Context, l topo.Leadership, m *topo.Map) error {
	src := c.opts.Source
	if src == nil {
		return nil
	}
	dbs := m.DBNames()
	for db := range m.Pins {
		if !slices.Contains(dbs, db) {
			dbs = append(dbs, db)
		}
	}
	sort.Strings(dbs)
	seen := map[string]PinStatus{}
	var errs []error
	for _, db := range dbs {
		cur := m.PinOf(db)
		st := PinStatus{Published: cur}
		want, err := src.Pin(ctx, db)
		if err == nil && want != "" {
			var vs []string
			if vs, err = src.Versions(ctx, db); err == nil && !slices.Contains(vs, want) {
				err = fmt.Errorf("coordinator: pinned version %q of %s is not in the source; what is served stays", want, db)
			}
		}
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, source.ErrNotFound):
			// The db is gone from the source: its pin stays as it is.
		case err != nil:
			st.Error = err.Error()
			if old := c.pinStatus(db); old.Error != st.Error {
				c.log.Error("pin marker not published; what is served stays", zap.String("db", db), zap.Error(err))
			}
		case want != cur.Version && cur.Generation >= topo.MaxPinGeneration:
			// Refused rather than wrapped: every node and router follows
			// only a greater generation, so a step to 0 (or any restart
			// of the sequence) would be ignored by all of them. Nothing
			// reaches this by pinning; only a hand-written pins/<db>.
			st.Error = fmt.Sprintf("coordinator: the pin generation of %s is at its maximum (%d): no further pin can be "+
				"published; what is served stays (docs/design.md says how to start the sequence again)", db, cur.Generation)
			if old := c.pinStatus(db); old.Error != st.Error {
				c.log.Warn("pin marker not published; what is served stays", zap.String("db", db),
					zap.Uint64("generation", cur.Generation), zap.String("wanted", want))
			}
		case want != cur.Version:
			next := topo.Pin{Version: want, Generation: cur.Generation + 1}
			if err := c.opts.Coord.SetPin(ctx, l.Token(), db, next); err != nil {
				errs = append(errs, fmt.Errorf("coordinator: publishing the pin of %s: %w", db, err))
				break
			}
			st.Published = next
			c.log.Info("pin published", zap.String("db", db), zap.String("from", cur.Version),
				zap.String("to", want), zap.Uint64("generation", next.Generation))
		}
		seen[db] = st
	}
	c.mu.Lock()
	c.status.Pins = seen
	c.mu.Unlock()
	return errors.Join(errs...)
}

func (c *Coordinator) pinStatus(db string) PinStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.status.Pins[db]
}

// servedVersion is the version of db the cluster serves: the pinned one
// while it is complete, else the newest complete one. Re-replication and
// rebalancing look after it.
func servedVersion(m *topo.Map, db string, minReplication int) string {
	if p := m.PinOf(db).Version; p != "" && m.Version(db, p).Complete(minReplication) {
		return p
	}
	return m.NewestComplete(db, minReplication)
}
