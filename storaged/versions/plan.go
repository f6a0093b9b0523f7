package versions

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"spangle/shared/source"
)

// candidate is a version of the source the manager may load: listed with
// data files, settled, and not failed with these same files.
type candidate struct {
	name  string
	files []source.File
	// local: the local store holds a complete copy built from these files,
	// which opens without reading the source.
	local bool
}

// plan is what one scan decides for a db: the version it heads for and,
// below it, the version to fall back on while the target is not active.
type plan struct {
	target, fallback *candidate
	listed           map[string]bool // every version the source lists
}

// watched is a version whose files have not been stable for the settle
// time yet: the listing last seen and since when it has not changed.
type watched struct {
	files []source.File
	since time.Time
}

// planDB walks db's versions from the newest down and picks the target
// and the fallback. A version is passed over while it has no data files,
// while its files are still changing (see settled), and once it failed
// with the files it still has; a version whose files cannot all be read
// fails here. Only the versions in walk are candidates (all of them, or
// the pinned one: see pinFor). ok is false when the source could not be
// listed: then nothing changes for the db.
func (m *Manager) planDB(ctx context.Context, db string, versions, walk []string) (p plan, ok bool) {
	p.listed = make(map[string]bool, len(versions))
	for _, v := range versions {
		p.listed[v] = true
	}
	versions = walk
	now := m.opts.Now()
	seen := map[string]bool{}
	defer m.pruneWatched(db, seen)
	for i := len(versions) - 1; i >= 0 && p.fallback == nil; i-- {
		name := versions[i]
		files, err := m.opts.Source.Files(ctx, db, name)
		switch {
		case errors.Is(err, source.ErrUnreadable):
			m.failListing(db, name, err)
			continue
		case err != nil:
			m.log.Error("listing files failed; keeping what is served", zap.String("db", db), zap.String("version", name), zap.Error(err))
			return p, false
		case len(files) == 0:
			// A version directory with no data file yet is one being
			// written (without require_success_file nothing else says
			// so): there is nothing to partition yet.
			m.log.Debug("version has no data files yet", zap.String("db", db), zap.String("version", name))
			continue
		}
		held, heldFiles, broken := m.known(db, name)
		if broken && sameFiles(heldFiles, files) {
			continue // retried once its files change, or after a transient error (retry.go)
		}
		// Held from these files: they settled before.
		ready := held && sameFiles(heldFiles, files)
		if !ready {
			seen[name] = true // its watch lasts while scans reach it
			ready = m.settled(ctx, db, name, files, now)
		}
		if !ready {
			if held {
				// Loaded before its files changed again: it stays as it
				// is until they are stable.
				files = heldFiles
			} else {
				continue
			}
		}
		c := &candidate{name: name, files: files}
		if man, err := m.opts.Store.ReadManifest(db, name); err == nil && man.Matches(files, nil) {
			c.local = true
		}
		if p.target == nil {
			p.target = c
		} else {
			p.fallback = c
		}
	}
	return p, true
}

// known returns what the manager knows of db/version: whether it holds it
// (building, loaded or served), the files it was loaded from, and whether
// it failed.
func (m *Manager) known(db, name string) (held bool, files []source.File, broken bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d := m.dbs[db]
	if d == nil || d.versions[name] == nil {
		return false, nil, false
	}
	vs := d.versions[name]
	if vs.phase == failed {
		return false, vs.files, !m.retryDueLocked(vs)
	}
	// A cancelled load still counts: ensureLocked marks it to load again.
	return vs.phase != retiring && vs.phase != removing, vs.files, false
}

// settled reports whether a version's files are done being written, so
// that it may be loaded: it holds _SUCCESS, or the local store holds a
// complete copy built from these very files, or this node has seen the
// same file list with the same sizes and times for SettleTime, counted
// from when it first saw them. File times alone prove nothing: a copy
// that keeps them (rsync -a, cp -p) writes old times on new files, one
// file at a time. An unsettled version gets a re-scan once it may have
// settled; it shows as SETTLING meanwhile (Health).
func (m *Manager) settled(ctx context.Context, db, name string, files []source.File, now time.Time) bool {
	settle := m.opts.SettleTime
	if settle <= 0 {
		return true
	}
	if ok, err := m.opts.Source.Succeeded(ctx, db, name); err == nil && ok {
		return true
	}
	if man, err := m.opts.Store.ReadManifest(db, name); err == nil && man.Matches(files, nil) {
		return true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	d := m.dbLocked(db)
	w := d.watch[name]
	if w == nil || !sameFiles(w.files, files) {
		if w != nil {
			m.log.Info("version's files still changing; waiting for them to settle", zap.String("db", db),
				zap.String("version", name), zap.Int("files", len(files)), zap.Duration("settle_time", settle))
		}
		w = &watched{files: files, since: now}
		d.watch[name] = w
	}
	if now.Sub(w.since) >= settle {
		return true
	}
	m.rescanLocked(w.since.Add(settle).Sub(now))
	return false
}

// settlingLocked says why a watched version is not loaded yet: how many
// files this node saw, unchanged since when, and how long they must stay
// so; "" once they have settled.
func (m *Manager) settlingLocked(w *watched) string {
	left := w.since.Add(m.opts.SettleTime).Sub(m.opts.Now())
	if left <= 0 {
		return ""
	}
	return fmt.Sprintf("waiting for its files to settle: %d data files unchanged since %s; loaded once unchanged for %s (settle_time), or at once with _SUCCESS",
		len(w.files), w.since.UTC().Format(time.RFC3339), m.opts.SettleTime)
}

// pruneWatched forgets the watched versions of db not in keep.
func (m *Manager) pruneWatched(db string, keep map[string]bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if d := m.dbs[db]; d != nil {
		for name := range d.watch {
			if !keep[name] {
				delete(d.watch, name)
			}
		}
	}
}

// rescanLocked asks for a scan in d (or sooner, if one is due sooner).
func (m *Manager) rescanLocked(d time.Duration) {
	at := time.Now().Add(d)
	if m.rescan != nil && !m.rescanAt.After(at) && m.rescanAt.After(time.Now()) {
		return
	}
	if m.rescan != nil {
		m.rescan.Stop()
	}
	m.rescanAt = at
	m.rescan = time.AfterFunc(d, m.kick)
}

// failListing marks db/version failed because its files cannot all be
// read; it is tried again once they list without error.
func (m *Manager) failListing(db, name string, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d := m.dbLocked(db)
	vs := d.versions[name]
	switch {
	case vs == nil:
	case vs.phase == failed:
		vs.reason, vs.files = err.Error(), nil
		return
	default:
		return // loaded from files readable then: it stays as it is
	}
	vs = &vstate{name: name, reason: err.Error(), started: m.opts.Now()}
	m.toLocked(db, vs, failed)
	d.versions[name] = vs
	m.failedN.Add(1)
	m.metrics.loads.WithLabelValues("error").Inc()
	m.publishLocked()
	m.log.Error("version has a data file that cannot be read; not loading it",
		zap.String("db", db), zap.String("version", name), zap.Error(err))
}

// dbLocked returns db's state, created if new.
func (m *Manager) dbLocked(db string) *dbState {
	d := m.dbs[db]
	if d == nil {
		d = &dbState{versions: map[string]*vstate{}, watch: map[string]*watched{}}
		m.dbs[db] = d
	}
	return d
}
