package versions

import (
	"context"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"

	"spangle/shared/dbver"
	"spangle/shared/source"
	"spangle/shared/wait"
	"spangle/storaged/builder"
	"spangle/storaged/loader"
	"spangle/storaged/reload"
)

// A servable version whose source files changed is built again beside
// the copy that serves (store.RebuildDir), from the source only: a peer
// serves the same name from the old files, so it is not asked. The
// served copy answers meanwhile, its phase unchanged. Once the new copy
// is built, synced and opened, it is moved in place on disk and swapped
// into the version with one snapshot swap, as a repaired partition is;
// the old copy closes once the requests that acquired it are done. A
// rebuild that fails leaves the old copy serving and shows why on
// /healthz, the status page and in the log; it is tried again when the
// files change again or at a refresh. Files that change again during a
// rebuild start it over. storaged/reload keeps track of which rebuild
// runs; reloadHost below builds and swaps.

// swapGrace is how long a version's replaced copy stays open after a
// rebuild is swapped in, for requests that read the snapshot just
// before the swap and acquire the copy just after.
const swapGrace = time.Second

// reasonRebuilding is what a servable version shows while it is rebuilt.
const reasonRebuilding = "its source files changed; building it again beside the copy that serves"

// startRebuildLocked asks m's reloader to build the servable vs of db
// again from c's files (a no-op when a rebuild from these files runs or
// failed), and shows it. Called with m.mu held.
func startRebuildLocked(m *Manager, db string, vs *vstate, files []source.File) {
	started, replaced := m.reload.Start(m.ctx, dbver.Of(db, vs.name), files, vs.v.NumPartitions, vs.v.Held(), m.forceRetry)
	if started == nil {
		return
	}
	if replaced != nil {
		m.log.Info("version's files changed again while it was rebuilt; starting over", zap.String("db", db), zap.String("version", vs.name))
	}
	vs.reason = reasonRebuilding
	m.metrics.reloads.Inc()
	m.log.Warn("version's files changed since it was loaded; building it again while the loaded copy serves",
		zap.String("db", db), zap.String("version", vs.name), zap.Int("files_before", len(vs.files)), zap.Int("files_now", len(files)))
}

// stopRebuildLocked cancels vs's rebuild, if any, and returns it: the
// caller waits for its Done before deleting the version's files. Called
// with m.mu held.
func stopRebuildLocked(m *Manager, db string, vs *vstate) *reload.Job {
	j := m.reload.Stop(dbver.Of(db, vs.name))
	if j != nil && vs.reason == reasonRebuilding {
		vs.reason = ""
	}
	return j
}

// reloadHost is the Manager as storaged/reload sees it (reload.Host).
type reloadHost struct{ m *Manager }

// Rebuild builds j's version again and swaps it in, or says why not;
// ctx is the rebuild's, parent the manager's (the replaced copy closes
// after swapGrace unless it ends).
func (h reloadHost) Rebuild(parent, ctx context.Context, j *reload.Job) {
	m := h.m
	db, name := j.V.DB, j.V.Version
	start := time.Now()
	m.mu.Lock()
	vs := m.dbs.servable(db, name)
	m.mu.Unlock()
	if vs != nil {
		select {
		case <-vs.durable: // its first load may still be writing its manifest
		case <-ctx.Done():
		}
	}
	nNow, err := loader.NumPartitions(j.Files, m.build.Formats(db))
	if err != nil {
		err = fmt.Errorf("versions: %s/%s: %w", db, name, err)
	}
	var held []int
	if err == nil {
		// The partitions held before when the count is unchanged, else
		// what Hooks.Held says (the cluster refuses a count other than
		// the one it knows).
		held = j.Held
		if nNow != j.N {
			held, err = m.opts.Hooks.held(ctx, db, name, nNow)
		}
	}
	var nv *Version
	if err == nil && ctx.Err() == nil {
		var o builder.Opened
		if o, err = m.build.BuildBeside(ctx, db, name, j.Files, nNow, held, m.opts.Now().UTC()); err == nil {
			nv = openedVersion(db, name, o, m.rep.Reports())
		}
	}

	removeRebuild := func() {
		if err := m.opts.Store.RemoveRebuild(dbver.Of(db, name)); err != nil {
			m.log.Warn("deleting an unfinished rebuild", zap.String("db", db), zap.String("version", name), zap.Error(err))
		}
	}
	m.mu.Lock()
	vs = m.dbs.servable(db, name)
	live := vs != nil && j.Current() && ctx.Err() == nil
	if live && err == nil && !slices.Equal(vs.v.Held(), j.Held) {
		// The cluster gave or took a partition meanwhile: start over.
		live = false
		stopRebuildLocked(m, db, vs)
		m.scans.kick()
	}
	if live && err == nil {
		err = m.opts.Store.SwapRebuilt(dbver.Of(db, name))
	}
	switch {
	case !live:
		m.mu.Unlock()
		if nv != nil {
			nv.close()
		}
		removeRebuild()
	case err != nil:
		j.Finish(true)
		vs.reason = "its source files changed and building it again failed (the copy loaded before serves): " + err.Error()
		m.failedN.Add(1)
		m.metrics.loads.WithLabelValues("error").Inc()
		m.mu.Unlock()
		if nv != nil {
			nv.close()
		}
		m.log.Error("building a version again from its changed files failed; the copy loaded before serves",
			zap.String("db", db), zap.String("version", name), zap.Error(err))
		removeRebuild()
	default:
		old := vs.v
		nv.current.Store(old.current.Load())
		nv.lastUsed.Store(old.lastUsed.Load())
		vs.v, vs.files = nv, j.Files
		j.Finish(false)
		vs.reason = ""
		m.rep.Forget(dbver.Of(db, name)) // what was bad in the old copy
		vs.loadTook = time.Since(start)
		m.loadedN.Add(1)
		m.metrics.loads.WithLabelValues("loaded").Inc()
		m.metrics.loadSeconds.Observe(vs.loadTook.Seconds())
		m.publishLocked()
		m.mu.Unlock()
		m.log.Info("version built again from its changed files and swapped in", zap.String("db", db),
			zap.String("version", name), zap.Ints("partitions", held), zap.Duration("took", vs.loadTook))
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			wait.Sleep(parent, swapGrace)
			old.closing.Store(true)
			waitUnused(old, 10*time.Second)
			old.close()
			if err := m.opts.Store.RemoveRetired(dbver.Of(db, name)); err != nil {
				m.log.Warn("deleting a version's replaced copy", zap.String("db", db), zap.String("version", name), zap.Error(err))
			}
		}()
	}
}
