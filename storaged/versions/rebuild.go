package versions

import (
	"context"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"

	"spangle/shared/source"
	"spangle/shared/wait"
	"spangle/storaged/builder"
	"spangle/storaged/loader"
)

// A version is immutable in principle, but a job that writes its output
// again overwrites the files of a version already served, and a copy
// that keeps file times can change a version's files after it loaded
// (the planner's settling sees the change only once it has happened). When a
// scan finds the settled files of a servable version different from the
// ones it was built from, the version is built again beside the copy
// that serves (store.RebuildDir), from the source only: a peer serves
// the same name from the old files, so it is not asked. The served copy
// answers meanwhile, its phase unchanged. Once the new copy is built,
// synced and opened, it is moved in place on disk and swapped into the
// version with one snapshot swap, as a repaired partition is; the old
// copy closes once the requests that acquired it are done. A rebuild
// that fails leaves the old copy serving and shows why on /healthz, the
// status page and in the log; it is tried again when the files change
// again or at a refresh. Files that change again during a rebuild start
// it over.

// swapGrace is how long a version's replaced copy stays open after a
// rebuild is swapped in, for requests that read the snapshot just
// before the swap and acquire the copy just after.
const swapGrace = time.Second

// rebuilding is a rebuild under way. Guarded by Manager.mu, except done.
type rebuilding struct {
	files  []source.File
	cancel context.CancelFunc
	// done is closed once the rebuild's goroutine no longer touches the
	// store's rebuild directory of the version.
	done chan struct{}
}

// reasonRebuilding is what a servable version shows while it is rebuilt.
const reasonRebuilding = "its source files changed; building it again beside the copy that serves"

// rebuildLocked starts building the servable vs again from files, unless
// a rebuild from these files runs or failed.
func (m *Manager) rebuildLocked(db string, vs *vstate, files []source.File) {
	prev := vs.rebuild
	switch {
	case prev != nil && source.SameFiles(prev.files, files):
		return
	case prev == nil && vs.rebuildFailed != nil && source.SameFiles(vs.rebuildFailed, files) && !m.forceRetry:
		return
	}
	if prev != nil {
		m.log.Info("version's files changed again while it was rebuilt; starting over", zap.String("db", db), zap.String("version", vs.name))
		prev.cancel()
	}
	parent := m.ctx
	if parent == nil {
		parent = context.Background()
	}
	ctx, cancel := context.WithCancel(parent)
	rb := &rebuilding{files: files, cancel: cancel, done: make(chan struct{})}
	vs.rebuild, vs.rebuildFailed = rb, nil
	vs.reason = reasonRebuilding
	m.metrics.reloads.Inc()
	m.log.Warn("version's files changed since it was loaded; building it again while the loaded copy serves",
		zap.String("db", db), zap.String("version", vs.name), zap.Int("files_before", len(vs.files)), zap.Int("files_now", len(files)))
	held := vs.v.Held()
	n := vs.v.NumPartitions
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer close(rb.done)
		defer cancel()
		if prev != nil {
			<-prev.done // it used the same directory
		}
		m.rebuildVersion(parent, ctx, db, vs, rb, n, held)
	}()
}

// stopRebuildLocked cancels vs's rebuild, if any, and returns it: the
// caller waits for its done before deleting the version's files.
func (m *Manager) stopRebuildLocked(vs *vstate) *rebuilding {
	rb := vs.rebuild
	if rb != nil {
		rb.cancel()
		vs.rebuild = nil
		if vs.reason == reasonRebuilding {
			vs.reason = ""
		}
	}
	return rb
}

// rebuildVersion builds vs again from rb.files and swaps it in, or says
// why not. heldBefore are the partitions the served copy holds, of n;
// ctx is the rebuild's, parent the manager's (the replaced copy closes
// after swapGrace unless it ends).
func (m *Manager) rebuildVersion(parent, ctx context.Context, db string, vs *vstate, rb *rebuilding, n int, heldBefore []int) {
	start := time.Now()
	select {
	case <-vs.durable: // its first load may still be writing its manifest
	case <-ctx.Done():
	}
	nNow, err := loader.NumPartitions(rb.files, m.formats(db))
	if err != nil {
		err = fmt.Errorf("versions: %s/%s: %w", db, vs.name, err)
	}
	var held []int
	if err == nil {
		// The partitions held before when the count is unchanged, else
		// what Hooks.Held says (the cluster refuses a count other than
		// the one it knows).
		held = heldBefore
		if nNow != n {
			held, err = m.opts.Hooks.held(ctx, db, vs.name, nNow)
		}
	}
	var nv *Version
	if err == nil && ctx.Err() == nil {
		var o builder.Opened
		if o, err = m.build.BuildBeside(ctx, db, vs.name, rb.files, nNow, held, m.opts.Now().UTC()); err == nil {
			nv = m.newVersion(db, vs.name, o)
		}
	}

	removeRebuild := func() {
		if err := m.opts.Store.RemoveRebuild(db, vs.name); err != nil {
			m.log.Warn("deleting an unfinished rebuild", zap.String("db", db), zap.String("version", vs.name), zap.Error(err))
		}
	}
	m.mu.Lock()
	live := vs.rebuild == rb && vs.phase.servable() && ctx.Err() == nil
	if live && err == nil && !slices.Equal(vs.v.Held(), heldBefore) {
		// The cluster gave or took a partition meanwhile: start over.
		live = false
		m.stopRebuildLocked(vs)
		m.kick()
	}
	if live && err == nil {
		err = m.opts.Store.SwapRebuilt(db, vs.name)
	}
	switch {
	case !live:
		m.mu.Unlock()
		if nv != nil {
			nv.close()
		}
		removeRebuild()
	case err != nil:
		vs.rebuild, vs.rebuildFailed = nil, rb.files
		vs.reason = "its source files changed and building it again failed (the copy loaded before serves): " + err.Error()
		m.failedN.Add(1)
		m.metrics.loads.WithLabelValues("error").Inc()
		m.mu.Unlock()
		if nv != nil {
			nv.close()
		}
		m.log.Error("building a version again from its changed files failed; the copy loaded before serves",
			zap.String("db", db), zap.String("version", vs.name), zap.Error(err))
		removeRebuild()
	default:
		old := vs.v
		nv.current.Store(old.current.Load())
		nv.lastUsed.Store(old.lastUsed.Load())
		vs.v, vs.files = nv, rb.files
		vs.rebuild = nil
		vs.reason = ""
		m.rep.Forget(db, vs.name) // what was bad in the old copy
		vs.loadTook = time.Since(start)
		m.loadedN.Add(1)
		m.metrics.loads.WithLabelValues("loaded").Inc()
		m.metrics.loadSeconds.Observe(vs.loadTook.Seconds())
		m.publishLocked()
		m.mu.Unlock()
		m.log.Info("version built again from its changed files and swapped in", zap.String("db", db),
			zap.String("version", vs.name), zap.Ints("partitions", held), zap.Duration("took", vs.loadTook))
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			wait.Sleep(parent, swapGrace)
			old.closing.Store(true)
			waitUnused(old, 10*time.Second)
			old.close()
			if err := m.opts.Store.RemoveRetired(db, vs.name); err != nil {
				m.log.Warn("deleting a version's replaced copy", zap.String("db", db), zap.String("version", vs.name), zap.Error(err))
			}
		}()
	}
}
