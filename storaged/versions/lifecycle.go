package versions

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"

	"go.uber.org/zap"

	"spangle/shared/source"
	"spangle/storaged/loader"
	"spangle/storaged/store"
	"spangle/storaged/table"
)

// startLoadLocked starts loading db/name in the background.
func (m *Manager) startLoadLocked(db string, d *dbState, name string, files []source.File) {
	parent := m.ctx
	if parent == nil {
		parent = context.Background()
	}
	ctx, cancel := context.WithCancel(parent)
	vs := &vstate{name: name, files: files, cancel: cancel, started: m.opts.Now(), durable: make(chan struct{}),
		progress: &loader.Progress{}}
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
		pending *pendingBuild
	)
	// The input format of the files says N (a version mixing formats
	// fails here).
	n, err := loader.NumPartitions(vs.files, m.formats(db))
	if err != nil {
		err = fmt.Errorf("versions: %s/%s: %w", db, vs.name, err)
	} else if m.opts.Hooks.Held != nil {
		m.setReason(vs, reasonWaitingForCluster)
		held, err = m.opts.Hooks.Held(ctx, db, vs.name, n)
		m.setReason(vs, "")
		if err != nil && ctx.Err() == nil {
			err = fmt.Errorf("versions: deciding the partitions of %s/%s: %w", db, vs.name, err)
		}
	} else {
		held = make([]int, n)
		for i := range held {
			held[i] = i
		}
	}
	// The wait for the cluster above is not the load's own time: took
	// starts here, and the wait is reported apart.
	clusterWait := time.Since(waitStart)
	start := time.Now()
	if err == nil {
		stop := make(chan struct{})
		go m.logProgress(db, vs.name, vs.progress, stop)
		v, pending, err = m.build(ctx, db, vs.name, vs.files, held, vs.progress)
		close(stop)
	}
	took := time.Since(start)

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
		if err := m.opts.Store.Remove(db, vs.name); err != nil {
			m.log.Warn("removing cancelled version", zap.Error(err))
		}
		if vs.reload {
			m.kick()
		}
		return
	case err != nil:
		m.toLocked(db, vs, failed)
		vs.cause, vs.reason = err.Error(), err.Error()
		msg := "loading version failed; an older version serves while its files stay as they are"
		if Transient(err) {
			m.retryLaterLocked(vs)
			msg = "loading version failed with a transient error; an older version serves until a retry succeeds"
		}
		m.failedN.Add(1)
		m.metrics.loads.WithLabelValues("error").Inc()
		m.dbm.loaded(db, "error", loader.Result{}, 0)
		m.publishLocked()
		m.mu.Unlock()
		m.log.Error(msg, zap.String("db", db), zap.String("version", vs.name), zap.Error(err))
		if err := m.opts.Store.Remove(db, vs.name); err != nil {
			m.log.Warn("removing failed version", zap.Error(err))
		}
		m.kick() // the next scan falls back on an older version
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
		res = pending.res
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
	m.log.Info("version loaded", fields...)
	if f := m.opts.Hooks.PartitionReady; f != nil {
		for _, p := range v.held {
			f(db, vs.name, p, n)
		}
	}
	m.mu.Lock()
	if d.versions[vs.name] == vs && vs.phase == loaded {
		if activate {
			m.activateLocked(db, d, vs)
		} else if !m.anyActiveLocked(d) {
			// It waits for the cluster, which may never call it complete
			// (another node may fail it): a scan then loads a fallback.
			m.rescanLocked(m.opts.FallbackAfter)
		}
	}
	m.mu.Unlock()
	if pending != nil {
		m.makeDurable(db, vs, pending)
	} else {
		m.afterReuse(db, vs)
	}
}

// pendingBuild is a version built and opened whose files may not be on
// disk yet, nor its manifest complete.
type pendingBuild struct {
	res loader.Result
	man store.Manifest
}

// makeDurable waits for a built version's files to reach the disk and
// then marks its manifest complete, so that a restart reuses it. Until
// then the version serves from the page cache; a crash meanwhile leaves an
// incomplete manifest, and the version is built again. A version removed
// meanwhile waits (vstate.durable) before its files are deleted.
func (m *Manager) makeDurable(db string, vs *vstate, p *pendingBuild) {
	if err := p.res.Sync(); err != nil {
		m.log.Error("syncing a loaded version failed; it serves from memory and will be loaded again after a restart",
			zap.String("db", db), zap.String("version", vs.name), zap.Error(err))
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !vs.phase.servable() {
		return // being removed
	}
	man := p.man
	man.Partitions = vs.v.Held() // AddPartition may have added some
	man.Complete = true
	man.Loaded = m.opts.Now().UTC()
	if err := m.opts.Store.WriteManifest(man); err != nil {
		m.log.Error("marking a loaded version complete", zap.String("db", db), zap.String("version", vs.name), zap.Error(err))
	}
}

// reasonWaitingForCluster is /healthz's reason of a BUILDING version
// whose partitions the cluster has not decided yet (Hooks.Held blocks).
const reasonWaitingForCluster = "waiting for the cluster to decide this node's partitions"

// setReason sets the reason a building version shows.
func (m *Manager) setReason(vs *vstate, reason string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if vs.phase.loading() {
		vs.reason = reason
	}
}

// build returns the opened version, reusing a complete local copy that
// matches the source (pending is nil), else loading it (pending says what
// makeDurable must finish): each partition that peers already serve is
// copied from one of them (copyFromPeers), the rest is built from the
// source.
func (m *Manager) build(ctx context.Context, db, name string, files []source.File, held []int, prog *loader.Progress) (v *Version, pending *pendingBuild, err error) {
	st := m.opts.Store
	lopts := m.loaderOptions(db)
	layout, err := loader.Detect(files, lopts.Formats)
	if err != nil {
		return nil, nil, fmt.Errorf("versions: %s/%s: %w", db, name, err)
	}
	n, ctype := layout.Partitions, layout.ContentType
	if man, err := st.ReadManifest(db, name); err == nil && man.Matches(files, held) && man.NumPartitions == n {
		// Its values were built as the marker said then.
		v, err := m.open(db, name, n, man.Created, man.ContentType, held)
		if err == nil {
			return v, nil, nil
		}
		m.log.Warn("local copy unreadable; loading again", zap.String("db", db), zap.String("version", name), zap.Error(err))
	}
	// Anything else there is half-written or stale.
	if err := st.Remove(db, name); err != nil {
		return nil, nil, localErr(err)
	}
	var created time.Time
	for _, f := range files {
		if f.ModTime.After(created) {
			created = f.ModTime
		}
	}
	man := store.Manifest{DB: db, Version: name, NumPartitions: n, Partitions: held, Files: files, Created: created, ContentType: ctype}
	if err := st.WriteManifest(man); err != nil {
		return nil, nil, localErr(err)
	}
	rest, err := m.copyFromPeers(ctx, db, name, held)
	if err != nil {
		return nil, nil, err
	}
	var res loader.Result
	if len(rest) > 0 {
		res, err = loader.Load(ctx, loader.Request{
			Source: m.opts.Source, DB: db, Version: name, Files: files, Held: rest,
			Dir:      func(p int) string { return st.PartitionDir(db, name, p) },
			Progress: prog,
		}, lopts)
		if err != nil {
			return nil, nil, err
		}
		m.metrics.records.Add(float64(res.Records))
	}
	if v, err = m.open(db, name, n, created, ctype, held); err != nil {
		return nil, nil, localErr(err)
	}
	return v, &pendingBuild{res: res, man: man}, nil
}

// localErr marks a failure of the local store met by build (removing
// what was there, writing the manifest, opening what was just written) as
// loader.ErrLocal: a disk error, not bad data (Transient).
func localErr(err error) error {
	return fmt.Errorf("versions: %w: %w", loader.ErrLocal, err)
}

// open opens the held partitions of a version, two at a time per CPU (an
// open reads each table's index and filter).
func (m *Manager) open(db, name string, n int, created time.Time, ctype string, held []int) (*Version, error) {
	return m.openIn(func(p int) string { return m.opts.Store.PartitionDir(db, name, p) }, db, name, n, created, ctype, held)
}

// openIn is open with the partitions in dir(p).
func (m *Manager) openIn(dir func(p int) string, db, name string, n int, created time.Time, ctype string, held []int) (*Version, error) {
	parts := make([]*table.Partition, n)
	errs := make([]error, n)
	sem := make(chan struct{}, 2*runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for _, p := range held {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			parts[p], errs[p] = table.OpenPartition(dir(p), m.opts.Cache)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, o := range parts {
			if o != nil {
				o.Close()
			}
		}
		return nil, err
	}
	return newVersion(db, name, n, created, ctype, parts, m.rep.reports), nil
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
	rb := m.stopRebuildLocked(vs)
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		if rb != nil {
			<-rb.done // it writes beside the version's files
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
		if err := m.opts.Store.Remove(db, vs.name); err != nil {
			m.log.Warn("deleting version", zap.String("db", db), zap.String("version", vs.name), zap.Error(err))
		}
		m.mu.Lock()
		m.forgetLocked(db, d, vs)
		if d.gone && len(d.versions) == 0 && m.dbs[db] == d {
			delete(m.dbs, db)
		}
		m.publishLocked()
		m.mu.Unlock()
		m.log.Info("version deleted", zap.String("db", db), zap.String("version", vs.name))
		if vs.reload {
			m.kick()
		}
	}()
}

// removeDBLocked stops serving a db that left the source.
func (m *Manager) removeDBLocked(db string, d *dbState) {
	d.gone = true
	m.dbm.forget(db)
	m.markRemovedLocked(db)
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
		if err := m.opts.Store.Remove(dv[0], dv[1]); err != nil && !errors.Is(err, context.Canceled) {
			m.log.Warn("deleting unknown local version", zap.Error(err))
			continue
		}
		m.log.Info("deleted local version not wanted", zap.String("db", dv[0]), zap.String("version", dv[1]))
	}
}

// Counts returns how many versions were loaded from the source, reused
// from the local store, and failed, since New.
func (m *Manager) Counts() (loaded, reused, failed int64) {
	return m.loadedN.Load(), m.reusedN.Load(), m.failedN.Load()
}

// copyFromPeers is the peers-first half of a load in cluster mode: each
// of held that another node already serves (a version pinned again after
// this node deleted it, or one this node lost with its disk) is copied
// from a peer and checked block by block, which reads nothing from the
// source. It returns the partitions left to build from the source: all
// of held without Hooks.CopyPartition, those no peer gave otherwise.
func (m *Manager) copyFromPeers(ctx context.Context, db, name string, held []int) (rest []int, err error) {
	cp := m.opts.Hooks.CopyPartition
	if cp == nil {
		return held, nil
	}
	copied := 0
	for _, p := range held {
		dir := m.opts.Store.PartitionDir(db, name, p)
		err := cp(ctx, db, name, p, dir)
		if err == nil {
			err = table.VerifyPartition(ctx, dir, nil)
		}
		if err == nil {
			copied++
			m.metrics.partitions.WithLabelValues(fromPeer).Inc()
			continue
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !errors.Is(err, ErrNoPeer) {
			m.log.Info("no good copy of the partition from a peer; building it from the source", zap.String("db", db),
				zap.String("version", name), zap.Int("partition", p), zap.Error(err))
		}
		if err := os.RemoveAll(dir); err != nil {
			return nil, localErr(err)
		}
		rest = append(rest, p)
	}
	m.metrics.partitions.WithLabelValues(fromSource).Add(float64(len(rest)))
	if copied > 0 {
		m.log.Info("partitions copied from peers", zap.String("db", db), zap.String("version", name),
			zap.Int("copied", copied), zap.Int("from_source", len(rest)))
	}
	return rest, nil
}
