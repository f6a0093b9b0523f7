package versions

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"spangle/shared/dbver"
	"spangle/shared/source"
	"spangle/storaged/builder"
	"spangle/storaged/loader"
	"spangle/storaged/retry"
)

// startLoadLocked starts loading db/name in the background. local: the
// local store holds it complete, and reopening it does not queue behind
// builds.
func (m *Manager) startLoadLocked(db string, d *dbState, name string, files []source.File, local bool) {
	parent := m.ctx
	if parent == nil {
		parent = context.Background()
	}
	ctx, cancel := context.WithCancel(parent)
	vs := &vstate{name: name, files: files, cancel: cancel, started: m.opts.Now(), durable: make(chan struct{}),
		progress: &loader.Progress{}, local: local}
	m.toLocked(db, vs, building)
	d.versions[name] = vs
	m.publishLocked()
	m.log.Info("loading version", zap.String("db", db), zap.String("version", name), zap.Int("files", len(files)))
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer cancel()
		m.load(ctx, db, vs)
	}()
}

// load builds (or reuses) a version, makes it servable, and then makes a
// built version durable.
func (m *Manager) load(ctx context.Context, db string, vs *vstate) {
	defer close(vs.durable)
	waitStart := time.Now()
	var (
		held    []int
		v       *Version
		pending *builder.Pending
		built   struct { // a build ahead of the decision, kept (speculate.go)
			o    builder.Opened
			err  error
			took time.Duration
			ok   bool
		}
	)
	// The input format of the files says N (a version mixing formats
	// fails here).
	n, err := loader.NumPartitions(vs.files, m.build.Formats(db))
	if err != nil {
		err = fmt.Errorf("versions: %s/%s: %w", db, vs.name, err)
	} else {
		var early *ahead
		if m.opts.Hooks.Guess != nil && m.opts.Hooks.Held != nil && !vs.local {
			early = m.buildAhead(ctx, db, vs, n)
		}
		if m.opts.Hooks.Held != nil {
			m.setReason(vs, reasonWaitingForCluster)
		}
		held, err = m.opts.Hooks.held(ctx, db, vs.name, n)
		if m.opts.Hooks.Held != nil {
			m.setReason(vs, "")
		}
		if early != nil {
			built.o, built.err, built.took, built.ok = early.take(held, err)
		}
	}
	// The waits for the cluster and for a build slot are not the load's
	// own time: took starts after them, and they are reported apart.
	clusterWait := time.Since(waitStart)
	// Which partitions peers serve now, before this version waits its
	// turn (Hooks.PeerServed).
	var copyable func(p int) bool
	if f := m.opts.Hooks.PeerServed; err == nil && f != nil && !built.ok {
		served := map[int]bool{}
		for _, p := range held {
			if f(db, vs.name, p) {
				served[p] = true
			}
		}
		copyable = func(p int) bool { return served[p] }
	}
	release := func() {}
	if err == nil && !vs.local && !built.ok {
		m.setReason(vs, reasonWaitingForSlot)
		release, err = m.queue.acquire(ctx, m.opts.Hooks.buildOrder(db))
		m.setReason(vs, "")
	}
	queueWait := time.Since(waitStart) - clusterWait
	start := time.Now()
	switch {
	case err == nil && built.ok:
		if err = built.err; err == nil {
			v, pending = openedVersion(db, vs.name, built.o, m.rep.Reports()), built.o.Pending
		}
	case err == nil:
		stop := make(chan struct{})
		go logProgress(m.log, m.opts.ProgressEvery, db, vs.name, vs.progress, stop)
		var o builder.Opened
		if o, err = m.build.Build(ctx, db, vs.name, vs.files, held, copyable, vs.progress); err == nil {
			v, pending = openedVersion(db, vs.name, o, m.rep.Reports()), o.Pending
		}
		close(stop)
		release()
	}
	took := time.Since(start)
	if built.ok {
		took = built.took
	}

	m.mu.Lock()
	d := m.dbs[db]
	stale := d == nil || d.versions[vs.name] != vs || vs.phase == cancelling
	switch {
	case stale:
		m.forgetLocked(db, d, vs)
		m.publishLocked()
		m.mu.Unlock()
		if v != nil {
			v.close()
		}
		if err := m.opts.Store.Remove(dbver.Of(db, vs.name)); err != nil {
			m.log.Warn("removing cancelled version", zap.Error(err))
		}
		if vs.reload {
			m.scans.kick()
		}
		m.loadEnded()
		return
	case err != nil:
		m.toLocked(db, vs, failed)
		vs.cause, vs.reason = err.Error(), err.Error()
		msg := "loading version failed; an older version serves while its files stay as they are"
		if retry.Transient(err) {
			m.retryLaterLocked(vs)
			msg = "loading version failed with a transient error; an older version serves until a retry succeeds"
		}
		m.failedN.Add(1)
		m.metrics.loads.WithLabelValues("error").Inc()
		m.dbm.loaded(db, "error", loader.Result{}, 0)
		m.publishLocked()
		m.mu.Unlock()
		m.log.Error(msg, zap.String("db", db), zap.String("version", vs.name), zap.Error(err))
		if err := m.opts.Store.Remove(dbver.Of(db, vs.name)); err != nil {
			m.log.Warn("removing failed version", zap.Error(err))
		}
		m.scans.kick() // the next scan falls back on an older version
		m.loadEnded()
		return
	}
	// Activate came while it loaded, or needs not come.
	activate := !m.opts.Hooks.Gated || vs.phase == activateOnLoad
	vs.v = v
	m.toLocked(db, vs, loaded)
	vs.loadedAt = m.opts.Now()
	how := "loaded"
	var res loader.Result
	if pending == nil {
		how = "reused"
		m.reusedN.Add(1)
	} else {
		res = pending.Result
		m.loadedN.Add(1)
		vs.loadTook = took
		m.metrics.loadSeconds.Observe(vs.loadTook.Seconds())
	}
	m.metrics.loads.WithLabelValues(how).Inc()
	m.dbm.loaded(db, how, res, took)
	m.publishLocked()
	m.mu.Unlock()
	fields := []zap.Field{zap.String("db", db), zap.String("version", vs.name), zap.String("how", how),
		zap.Ints("partitions", v.held), zap.Int64("records", res.Records), zap.Int64("bytes", res.Bytes),
		zap.Int("presharded_files", res.FastFiles), zap.Duration("took", took)}
	if m.opts.Hooks.Held != nil {
		fields = append(fields, zap.Duration("cluster_wait", clusterWait))
	}
	fields = append(fields, zap.Duration("queue_wait", queueWait))
	if built.ok {
		fields = append(fields, zap.Bool("built_ahead", true))
	}
	m.log.Info("version loaded", fields...)
	if f := m.opts.Hooks.PartitionReady; f != nil {
		// Together: cluster mode publishes each in ZooKeeper, and calls
		// waiting at once go in one multi-op, where one after another
		// each waited for its own round trip.
		var wg sync.WaitGroup
		for _, p := range v.held {
			wg.Add(1)
			go func() {
				defer wg.Done()
				f(db, vs.name, p, n)
			}()
		}
		wg.Wait()
	}
	m.mu.Lock()
	if d.versions[vs.name] == vs && vs.phase == loaded {
		if activate {
			m.activateLocked(db, d, vs)
		} else if !d.anyActive() {
			// It waits for the cluster, which may never call it complete
			// (another node may fail it): a scan then loads a fallback.
			m.scans.after(m.opts.FallbackAfter)
		}
	}
	m.mu.Unlock()
	m.loadEnded()
	if pending != nil {
		m.makeDurable(db, vs, pending)
	} else {
		m.afterReuse(db, vs)
	}
}

// loadEnded tells Options.AfterLoad that a load has ended.
func (m *Manager) loadEnded() {
	if f := m.opts.AfterLoad; f != nil {
		f()
	}
}

// makeDurable waits for a built version's files to reach the disk and
// then marks its manifest complete, so that a restart reuses it. Until
// then the version serves from the page cache; a crash meanwhile leaves an
// incomplete manifest, and the version is built again. A version removed
// meanwhile waits (vstate.durable) before its files are deleted.
func (m *Manager) makeDurable(db string, vs *vstate, p *builder.Pending) {
	if err := p.Result.Sync(); err != nil {
		m.log.Error("syncing a loaded version failed; it serves from memory and will be loaded again after a restart",
			zap.String("db", db), zap.String("version", vs.name), zap.Error(err))
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !vs.phase.servable() {
		return // being removed
	}
	man := p.Manifest
	man.Partitions = vs.v.Held() // replica.Set.Add may have added some
	man.Complete = true
	man.Loaded = m.opts.Now().UTC()
	if err := m.opts.Store.WriteManifest(man); err != nil {
		m.log.Error("marking a loaded version complete", zap.String("db", db), zap.String("version", vs.name), zap.Error(err))
	}
}

// reasonWaitingForCluster is /healthz's reason of a BUILDING version
// whose partitions the cluster has not decided yet (Hooks.Held blocks).
const reasonWaitingForCluster = "waiting for the cluster to decide this node's partitions"

// reasonWaitingForSlot is /healthz's reason of a BUILDING version that
// waits for other versions' builds to finish (buildQueue).
const reasonWaitingForSlot = "waiting for other versions' builds to finish"

// setReason sets the reason a building version shows.
func (m *Manager) setReason(vs *vstate, reason string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if vs.phase.loading() {
		vs.reason = reason
	}
}

// removeVersionLocked stops serving a loaded version and deletes it, in
// the background: BeforeRemove, then out of the snapshot, then closed
// once no request uses it, then deleted from disk.
func (m *Manager) removeVersionLocked(db string, d *dbState, vs *vstate) {
	if !vs.phase.servable() || !m.toLocked(db, vs, retiring) {
		return
	}
	if d.current == vs.name {
		d.current = ""
	}
	rb := stopRebuildLocked(m, db, vs)
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		if rb != nil {
			<-rb.Done() // it writes beside the version's files
		}
		if f := m.opts.Hooks.BeforeRemove; f != nil {
			f(db, vs.name, vs.v.Held())
		}
		m.mu.Lock()
		m.toLocked(db, vs, removing)
		m.publishLocked()
		m.mu.Unlock()
		vs.v.closing.Store(true)
		waitUnused(vs.v, 10*time.Second)
		vs.v.close()
		if vs.durable != nil {
			<-vs.durable // its load may still be syncing or writing its manifest
		}
		if err := m.opts.Store.Remove(dbver.Of(db, vs.name)); err != nil {
			m.log.Warn("deleting version", zap.String("db", db), zap.String("version", vs.name), zap.Error(err))
		}
		m.mu.Lock()
		m.forgetLocked(db, d, vs)
		m.rep.Forget(dbver.Of(db, vs.name))
		m.reload.Forget(dbver.Of(db, vs.name))
		if d.gone && len(d.versions) == 0 && m.dbs[db] == d {
			delete(m.dbs, db)
			m.plan.Forget(db)
		}
		m.publishLocked()
		m.mu.Unlock()
		m.log.Info("version deleted", zap.String("db", db), zap.String("version", vs.name))
		if vs.reload {
			m.scans.kick()
		}
	}()
}

// removeDBLocked stops serving a db that left the source.
func (m *Manager) removeDBLocked(db string, d *dbState) {
	d.gone = true
	m.dbm.forget(db)
	m.removed.Removed(db)
	d.current = ""
	for _, vs := range d.versions {
		switch {
		case vs.phase.loading():
			m.cancelLocked(db, vs)
		case vs.phase.servable():
			vs.v.current.Store(false)
			m.removeVersionLocked(db, d, vs)
		case vs.phase == failed:
			m.forgetLocked(db, d, vs)
		}
	}
	if len(d.versions) == 0 {
		delete(m.dbs, db)
		m.plan.Forget(db)
	}
}

// cleanLocalStore deletes local versions the manager does not know: left
// over from before a restart and not reused, or of dbs gone meanwhile.
func (m *Manager) cleanLocalStore() {
	local, err := m.opts.Store.List()
	if err != nil {
		m.log.Warn("listing local store", zap.Error(err))
		return
	}
	m.mu.Lock()
	var drop [][2]string
	for db, versions := range local {
		for _, v := range versions {
			if d := m.dbs[db]; d == nil || d.versions[v] == nil {
				drop = append(drop, [2]string{db, v})
			}
		}
	}
	m.mu.Unlock()
	for _, dv := range drop {
		// Checked again under the lock: a load may have started since.
		m.mu.Lock()
		d := m.dbs[dv[0]]
		known := d != nil && d.versions[dv[1]] != nil
		m.mu.Unlock()
		if known {
			continue
		}
		if err := m.opts.Store.Remove(dbver.Of(dv[0], dv[1])); err != nil && !errors.Is(err, context.Canceled) {
			m.log.Warn("deleting unknown local version", zap.Error(err))
			continue
		}
		m.log.Info("deleted local version not wanted", zap.String("db", dv[0]), zap.String("version", dv[1]))
	}
}
