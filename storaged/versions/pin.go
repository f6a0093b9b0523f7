package versions

import (
	"context"
	"fmt"
	"slices"

	"go.uber.org/zap"

	"spangle/shared/topo"
	"spangle/shared/wire"
	"spangle/storaged/store"
)

// pinState is a db's pin. Guarded by Manager.mu.
type pinState struct {
	// version is the pin in force: the only version a scan plans for the
	// db; "" when unpinned.
	version string
	// generation grows with every change of version: the cluster's
	// generation with Hooks.Pin, else this node's own count of its steps
	// (1, 2, 3...), kept in the local store across restarts.
	generation uint64
	// err says why the marker (or the cluster's pin) is not followed;
	// the pin in force stays meanwhile.
	err string
	// newer lists the versions the source lists above the pinned one at
	// the last scan: held back, not loaded, shown as HELD.
	newer []string
}

// heldBackLocked returns the versions of d held back by its pin that the
// manager does not know otherwise (a version it still holds shows its
// own phase), with the reason to show.
func heldBackLocked(d *dbState) (names []string, reason string) {
	for _, v := range d.pin.newer {
		if d.versions[v] == nil {
			names = append(names, v)
		}
	}
	return names, wire.HeldReason(d.pin.version)
}

// pinFor reads db's pin at a scan and returns the versions the scan
// plans from: all of them when unpinned, only the pinned one otherwise.
// A marker that cannot be read or parsed, or that names a version the
// source does not list, changes nothing: the pin in force stays (none, or
// the previous one), and the reason is shown on the status page.
func (m *Manager) pinFor(ctx context.Context, db string, versions []string) []string {
	var (
		want topo.Pin
		err  error
		ok   = true
	)
	if h := m.opts.Hooks.Pin; h != nil {
		want, ok = h(db)
	} else {
		want.Version, err = m.opts.Source.Pin(ctx, db)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	ps := &m.dbLocked(db).pin
	if m.opts.Hooks.Pin == nil {
		m.adoptSavedPinLocked(db, ps)
	}
	switch {
	case err != nil:
		if ps.err != err.Error() {
			m.log.Error("pin marker not followed; what is served stays", zap.String("db", db), zap.Error(err))
		}
		ps.err = err.Error()
	case !ok:
	case want.Version != "" && !slices.Contains(versions, want.Version):
		why := fmt.Sprintf("versions: pinned version %q is not in the source; what is served stays", want.Version)
		if ps.err != why {
			m.log.Error("pinned version not in the source; what is served stays", zap.String("db", db), zap.String("pin", want.Version))
		}
		ps.err = why
	default:
		ps.err = ""
		if want.Version != ps.version || (want.Generation > ps.generation && m.opts.Hooks.Pin != nil) {
			if want.Version != ps.version {
				m.log.Info("pin changed", zap.String("db", db), zap.String("from", ps.version), zap.String("to", want.Version))
			}
			ps.version = want.Version
			if m.opts.Hooks.Pin != nil {
				ps.generation = want.Generation
			} else {
				m.stepStandalonePinLocked(db, ps)
			}
		}
	}
	m.setPinGaugesLocked()
	ps.newer = nil
	for _, v := range versions {
		if ps.version != "" && v > ps.version {
			ps.newer = append(ps.newer, v)
		}
	}
	if ps.version == "" {
		return versions
	}
	if !slices.Contains(versions, ps.version) {
		// Pinned before, gone from the source since: it is not planned,
		// and what is served stays.
		return nil
	}
	return []string{ps.version}
}

// adoptSavedPinLocked starts a standalone db's pin from the step this
// node recorded before a restart: the pin in force and its generation, so
// that a restart neither reuses a generation a router has seen nor forgets
// a pin whose marker cannot be read now.
func (m *Manager) adoptSavedPinLocked(db string, ps *pinState) {
	if ps.generation != 0 {
		return
	}
	if saved, ok := m.savedPins[db]; ok {
		ps.version, ps.generation = saved.Version, saved.Generation
		delete(m.savedPins, db)
	}
}

// stepStandalonePinLocked numbers a standalone node's pin step: one above
// the last (1, 2, 3... as the leader numbers the cluster's), recorded in
// the local store before routers can see it. A generation at
// topo.MaxPinGeneration stays there: no reader would take a smaller one.
// A record that cannot be written is logged; the step is taken anyway.
func (m *Manager) stepStandalonePinLocked(db string, ps *pinState) {
	if ps.generation < topo.MaxPinGeneration {
		ps.generation++
	}
	step := store.PinStep{Version: ps.version, Generation: ps.generation}
	if err := m.opts.Store.SavePinStep(db, step); err != nil {
		m.log.Error("recording the pin step in the local store; a restart may number steps again from the last one recorded",
			zap.String("db", db), zap.Uint64("generation", ps.generation), zap.Error(err))
	}
}

// pinStatusLocked returns what the status page says of db's pin: the
// version in force, its generation, and why the marker is not followed
// or the pinned version does not serve.
func (m *Manager) pinStatusLocked(d *dbState) (version string, generation uint64, reason string) {
	ps := d.pin
	reason = ps.err
	if vs := d.versions[ps.version]; ps.version != "" && vs != nil && vs.phase == failed {
		reason = joinReasons(reason, fmt.Sprintf("pinned version %q failed to load: %s", ps.version, vs.reason))
	}
	return ps.version, ps.generation, reason
}

// setPinGaugesLocked counts the pinned dbs and the markers not followed.
func (m *Manager) setPinGaugesLocked() {
	var pinned, bad float64
	for _, d := range m.dbs {
		if d.pin.version != "" {
			pinned++
		}
		if _, _, why := m.pinStatusLocked(d); why != "" {
			bad++
		}
	}
	m.metrics.pinned.Set(pinned)
	m.metrics.pinErrors.Set(bad)
}
