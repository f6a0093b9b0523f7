package planner

import (
	"context"
	"fmt"
	"slices"

	"go.uber.org/zap"

	"spangle/shared/topo"
)

// pinState is a db's pin. Guarded by Planner.mu.
type pinState struct {
	// version is the pin in force: the only version a scan plans for the
	// db; "" when unpinned.
	version string
	// generation grows with every change of version: the cluster's
	// generation with Options.Pin, else the time of the change in
	// nanoseconds (never less than one above the previous).
	generation uint64
	// err says why the marker (or the cluster's pin) is not followed;
	// the pin in force stays meanwhile.
	err string
	// newer lists the versions the source lists above the pinned one at
	// the last scan: held back, not loaded, shown as HELD.
	newer []string
}

// pinFor reads db's pin at a scan and returns the versions the scan
// plans from, all of them when unpinned, only the pinned one otherwise,
// and the pin in force. A marker that cannot be read or parsed, or that
// names a version the source does not list, changes nothing: the pin in
// force stays (none, or the previous one), and the reason is shown on
// the status page.
func (pl *Planner) pinFor(ctx context.Context, db string, versions []string) ([]string, string) {
	var (
		want topo.Pin
		err  error
		ok   = true
	)
	if h := pl.opts.Pin; h != nil {
		want, ok = h(db)
	} else {
		want.Version, err = pl.opts.Source.Pin(ctx, db)
	}
	pl.mu.Lock()
	defer pl.mu.Unlock()
	ps := &pl.dbLocked(db).pin
	switch {
	case err != nil:
		if ps.err != err.Error() {
			pl.log.Error("pin marker not followed; what is served stays", zap.String("db", db), zap.Error(err))
		}
		ps.err = err.Error()
	case !ok:
	case want.Version != "" && !slices.Contains(versions, want.Version):
		why := fmt.Sprintf("versions: pinned version %q is not in the source; what is served stays", want.Version)
		if ps.err != why {
			pl.log.Error("pinned version not in the source; what is served stays", zap.String("db", db), zap.String("pin", want.Version))
		}
		ps.err = why
	default:
		ps.err = ""
		if want.Version != ps.version || (want.Generation > ps.generation && pl.opts.Pin != nil) {
			if want.Version != ps.version {
				pl.log.Info("pin changed", zap.String("db", db), zap.String("from", ps.version), zap.String("to", want.Version))
			}
			ps.version = want.Version
			if pl.opts.Pin != nil {
				ps.generation = want.Generation
			} else {
				// Standalone, the clock orders the steps, so that a
				// restart (or another node) never reuses a generation a
				// router has seen: routerd's static discovery takes the
				// greatest over the nodes as the latest step.
				ps.generation = max(ps.generation+1, uint64(pl.opts.Now().UnixNano()))
			}
		}
	}
	ps.newer = nil
	for _, v := range versions {
		if ps.version != "" && v > ps.version {
			ps.newer = append(ps.newer, v)
		}
	}
	if ps.version == "" {
		return versions, ""
	}
	if !slices.Contains(versions, ps.version) {
		// Pinned before, gone from the source since: it is not planned,
		// and what is served stays.
		return nil, ps.version
	}
	return []string{ps.version}, ps.version
}
