package planner

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.uber.org/zap"

	"spangle/shared/dbver"
	"spangle/shared/source"
	"spangle/shared/topo"
	"spangle/storaged/store"
)

// Candidate is a version of the source the manager may load: listed with
// data files, settled, and not failed with these same files.
type Candidate struct {
	Name  string
	Files []source.File
	// Local: the local store holds a complete copy built from these
	// files, which opens without reading the source.
	Local bool
}

// Plan is what one scan decides for a db: the version it heads for and,
// below it, the version to fall back on while the target is not active.
type Plan struct {
	Target, Fallback *Candidate
	Listed           map[string]bool // every version the source lists
	// Pin is the pinned version in force, "" when unpinned: a failed
	// pinned version stays to show why the pin does not serve.
	Pin string
}

// Known is what the manager knows of a version.
type Known struct {
	// Any: it has the version, in any phase.
	Any bool
	// Held: it holds the version, building, loaded or served, and not on
	// its way out.
	Held bool
	// Files are the files it was loaded (or failed) from.
	Files []source.File
	// Broken: it failed with Files and is not due to be tried again.
	Broken bool
}

// Host is what the planner needs of the version manager. Each call takes
// the manager's lock; none is made while the planner holds its own.
type Host interface {
	// Version returns what the manager knows of db/name.
	Version(db, name string) Known
	// Fail marks db/name failed: its files cannot all be read, or its
	// _SUCCESS marker cannot be used.
	Fail(db, name string, err error)
	// Rescan asks for a scan in d (or sooner, if one is due sooner).
	Rescan(d time.Duration)
	// RetryFailed forgets db's failed versions, so that the scan plans
	// them again (its _FORMAT changed).
	RetryFailed(db string)
}

// Options configures a Planner.
type Options struct {
	Source source.Source
	Store  *store.Store
	// Log defaults to no logging.
	Log *zap.Logger
	// SettleTime is how long this node must have seen a version's files
	// unchanged (names, sizes and modification times), from when it first
	// saw them, before it loads the version, unless it holds _SUCCESS or
	// the local store holds it complete; 0 plans a version as soon as it
	// is listed.
	SettleTime time.Duration
	// Pin returns the db's pin the cluster decided, followed in place of
	// this node's own reading of the _PIN marker so that every node
	// agrees. ok false: the cluster's pin is not known now, and the pin in
	// force stays. nil: standalone, the marker is read at every scan.
	Pin func(db string) (p topo.Pin, ok bool)
	// Now defaults to time.Now.
	Now func() time.Time
}

// dbState is what the planner keeps of one db. Guarded by Planner.mu.
type dbState struct {
	watch map[string]*watched // versions whose files are not settled yet
	// awaiting: versions whose _SUCCESS manifest lists files not there
	// yet, with those files (success.go).
	awaiting map[string][]string
	pin      pinState
	format   formatState
}

// watched is a version whose files have not been stable for the settle
// time yet: the listing last seen and since when it has not changed.
type watched struct {
	files []source.File
	since time.Time
}

// Planner plans the scans of one node. It is safe for concurrent use.
type Planner struct {
	opts Options
	host Host
	log  *zap.Logger

	mu  sync.Mutex // guards dbs and savedPins
	dbs map[string]*dbState
	// savedPins is each db's last standalone pin step, as recorded in
	// the local store (pin.go); it outlives Forget and Reset.
	savedPins map[string]store.PinStep
}

// New returns a Planner for host.
func New(opts Options, host Host) *Planner {
	if opts.Log == nil {
		opts.Log = zap.NewNop()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	pl := &Planner{opts: opts, host: host, log: opts.Log, dbs: map[string]*dbState{}, savedPins: map[string]store.PinStep{}}
	if opts.Pin == nil && opts.Store != nil {
		saved, err := opts.Store.PinSteps()
		if err != nil {
			// Counted again from 1: routers started since take the
			// steps; older ones only once past the last they saw.
			pl.log.Error("reading the pin steps recorded in the local store", zap.Error(err))
		} else {
			pl.savedPins = saved
		}
	}
	return pl
}

// dbLocked returns db's state, created if new.
func (pl *Planner) dbLocked(db string) *dbState {
	d := pl.dbs[db]
	if d == nil {
		d = &dbState{watch: map[string]*watched{}, awaiting: map[string][]string{}}
		pl.dbs[db] = d
	}
	return d
}

// Forget drops what the planner keeps of db: the manager forgot the db
// (it left the source and nothing of it is left).
func (pl *Planner) Forget(db string) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	delete(pl.dbs, db)
}

// Reset drops what the planner keeps of every db (the manager stopped).
func (pl *Planner) Reset() {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	pl.dbs = map[string]*dbState{}
}

// Plan reads db's markers and walks its versions (all the source lists,
// ascending) from the newest down to pick the target and the fallback. A
// version is passed over while it has no data files, while its files are
// still changing (see settled), and once it failed with the files it
// still has; a version whose files cannot all be read fails here. ok is
// false when the source could not be listed: then nothing changes for
// the db.
func (pl *Planner) Plan(ctx context.Context, db string, versions []string) (p Plan, ok bool) {
	walk, pin := pl.pinFor(ctx, db, versions)
	walk = pl.formatFor(ctx, db, walk)
	p.Pin = pin
	p.Listed = make(map[string]bool, len(versions))
	for _, v := range versions {
		p.Listed[v] = true
	}
	now := pl.opts.Now()
	seen := map[string]bool{}
	defer pl.prune(db, seen)
	for i := len(walk) - 1; i >= 0 && p.Fallback == nil; i-- {
		name := walk[i]
		files, err := pl.opts.Source.Files(ctx, db, name)
		switch {
		case errors.Is(err, source.ErrUnreadable):
			pl.host.Fail(db, name, err)
			continue
		case err != nil:
			pl.log.Error("listing files failed; keeping what is served", zap.String("db", db), zap.String("version", name), zap.Error(err))
			return p, false
		case len(files) == 0:
			// A version directory with no data file yet is one being
			// written (without require_success_file nothing else says
			// so): there is nothing to partition yet.
			pl.log.Debug("version has no data files yet", zap.String("db", db), zap.String("version", name))
			continue
		}
		k := pl.host.Version(db, name)
		if k.Broken && source.SameFiles(k.Files, files) {
			continue // retried once its files change, or after a transient error
		}
		// Held from these files: they settled before.
		ready := k.Held && source.SameFiles(k.Files, files)
		if ok, err := pl.successReady(ctx, db, name, files, ready); err != nil {
			if errors.Is(err, source.ErrBadSuccess) {
				pl.host.Fail(db, name, err)
				continue
			}
			pl.log.Error("reading _SUCCESS failed; keeping what is served", zap.String("db", db), zap.String("version", name), zap.Error(err))
			return p, false
		} else if !ok {
			seen[name] = true
			continue // waits for the files its _SUCCESS manifest lists
		}
		if !ready {
			seen[name] = true // its watch lasts while scans reach it
			ready = pl.settled(ctx, db, name, files, now)
		}
		if !ready {
			if k.Held {
				// Loaded before its files changed again: it stays as it
				// is until they are stable.
				files = k.Files
			} else {
				continue
			}
		}
		c := &Candidate{Name: name, Files: files}
		if man, err := pl.opts.Store.ReadManifest(dbver.Of(db, name)); err == nil && man.Matches(files, nil) {
			c.Local = true
		}
		if p.Target == nil {
			p.Target = c
		} else {
			p.Fallback = c
		}
	}
	return p, true
}

// settled reports whether a version's files are done being written, so
// that it may be loaded: it holds _SUCCESS, or the local store holds a
// complete copy built from these very files, or this node has seen the
// same file list with the same sizes and times for SettleTime, counted
// from when it first saw them. File times alone prove nothing: a copy
// that keeps them (rsync -a, cp -p) writes old times on new files, one
// file at a time. An unsettled version gets a re-scan once it may have
// settled; it shows as SETTLING meanwhile (Status).
func (pl *Planner) settled(ctx context.Context, db, name string, files []source.File, now time.Time) bool {
	settle := pl.opts.SettleTime
	if settle <= 0 {
		return true
	}
	if ok, err := pl.opts.Source.Succeeded(ctx, db, name); err == nil && ok {
		return true
	}
	if man, err := pl.opts.Store.ReadManifest(dbver.Of(db, name)); err == nil && man.Matches(files, nil) {
		return true
	}
	pl.mu.Lock()
	d := pl.dbLocked(db)
	w := d.watch[name]
	if w == nil || !source.SameFiles(w.files, files) {
		if w != nil {
			pl.log.Info("version's files still changing; waiting for them to settle", zap.String("db", db),
				zap.String("version", name), zap.Int("files", len(files)), zap.Duration("settle_time", settle))
		}
		w = &watched{files: files, since: now}
		d.watch[name] = w
	}
	left := w.since.Add(settle).Sub(now)
	pl.mu.Unlock()
	if left <= 0 {
		return true
	}
	pl.host.Rescan(left)
	return false
}

// prune forgets the watched and awaiting versions of db not in keep.
func (pl *Planner) prune(db string, keep map[string]bool) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if d := pl.dbs[db]; d != nil {
		for name := range d.watch {
			if !keep[name] {
				delete(d.watch, name)
			}
		}
		for name := range d.awaiting {
			if !keep[name] {
				delete(d.awaiting, name)
			}
		}
	}
}
