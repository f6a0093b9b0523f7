package planner

import (
	"context"
	"fmt"
	"slices"

	"go.uber.org/zap"

	"spangle/shared/topo"
	"spangle/storaged/store"
)

// pinState is a db's pin. Guarded by Planner.mu.
type pinState struct {
	// version is the pin in force: the only version a scan plans for the
	// db; "" when unpinned.
	version string
	// generation grows with every change of version: the cluster's
	// generation with Options.Pin, else this node's own count of its steps
	// (1, 2, 3...), kept in the local store across restarts.
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
	if pl.opts.Pin == nil {
		pl.adoptSavedPinLocked(db, ps)
	}
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
				pl.stepStandalonePinLocked(db, ps)
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

// adoptSavedPinLocked starts a standalone db's pin from the last step
// this node recorded (before a restart, or before the db left the source
// and came back): the pin in force and its generation, so that no
// generation a router has seen is used again and a pin whose marker
// cannot be read now is not forgotten.
func (pl *Planner) adoptSavedPinLocked(db string, ps *pinState) {
	if ps.generation != 0 {
		return
	}
	if saved, ok := pl.savedPins[db]; ok {
		ps.version, ps.generation = saved.Version, saved.Generation
	}
}

// stepStandalonePinLocked numbers a standalone node's pin step: one above
// the last (1, 2, 3... as the leader numbers the cluster's), recorded in
// the local store before routers can see it. A generation at
// topo.MaxPinGeneration stays there: no reader would take a smaller one.
// A record that cannot be written is logged; the step is taken anyway.
func (pl *Planner) stepStandalonePinLocked(db string, ps *pinState) {
	if ps.generation < topo.MaxPinGeneration {
		ps.generation++
	}
	step := store.PinStep{Version: ps.version, Generation: ps.generation}
	pl.savedPins[db] = step
	if err := pl.opts.Store.SavePinStep(db, step); err != nil {
		pl.log.Error("recording the pin step in the local store; a restart may number steps again from the last one recorded",
			zap.String("db", db), zap.Uint64("generation", ps.generation), zap.Error(err))
	}
}
