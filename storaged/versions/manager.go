package versions

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"spangle/shared/dbver"
	"spangle/shared/parquetkv"
	"spangle/shared/source"
	"spangle/shared/wire"
	"spangle/storaged/builder"
	"spangle/storaged/dbremoval"
	"spangle/storaged/planner"
	"spangle/storaged/reload"
	"spangle/storaged/repair"
	"spangle/storaged/replica"
	"spangle/storaged/retry"
)

// dbTable is every db the manager knows. Guarded by Manager.mu.
type dbTable map[string]*dbState

// dbState is what the manager knows of one db. Guarded by Manager.mu.
type dbState struct {
	versions map[string]*vstate
	current  string
	gone     bool    // removed from the source
	view     *dbView // its view in the last snapshot (publishLocked); never changed once published
}

// Manager owns the versions of every db. It is safe for concurrent use.
type Manager struct {
	opts     Options
	log      *zap.Logger
	metrics  *metrics
	dbm      *dbMetrics
	rep      *repair.Repairer   // rebuilds corrupt partitions (partitions.go)
	build    *builder.Builder   // makes and opens local copies (lifecycle.go)
	plan     *planner.Planner   // what each scan heads for (plan.go)
	replicas *replica.Set       // partitions added and dropped (partitions.go)
	reload   *reload.Reloader   // servable versions built again as their files changed (rebuild.go)
	removed  *dbremoval.Tracker // dbs gone from the source, until the cluster forgets them
	view     atomic.Pointer[view]
	limit    chan struct{}
	queue    *buildQueue // admits builds of versions a few at a time (buildqueue.go)

	loadedN, reusedN, failedN atomic.Int64
	retryNow                  atomic.Bool // Refresh asked for a scan: it retries at once

	mu     sync.Mutex // guards dbs, ctx, scans' timer and forceRetry
	dbs    dbTable
	ctx    context.Context // Run's context, once running
	scans  scans           // when the next scan is due (scans.go)
	wg     sync.WaitGroup  // loads and removals
	scanMu sync.Mutex      // one scan at a time
	source sourceHealth    // the last listing's outcome

	forceRetry bool // the scan under way was asked for by Refresh (retry.go)

	start startup // what the first scan reopens (startup.go)

}

// New returns a Manager; Run starts it.
func New(opts Options) (*Manager, error) {
	if opts.Source == nil || opts.Store == nil {
		return nil, errors.New("versions: Source and Store are required")
	}
	if opts.Log == nil {
		opts.Log = zap.NewNop()
	}
	if opts.Retention <= 0 {
		opts.Retention = DefaultRetention
	}
	if opts.MaxParallelLoads <= 0 {
		opts.MaxParallelLoads = runtime.GOMAXPROCS(0)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.ProgressEvery <= 0 {
		opts.ProgressEvery = DefaultProgressEvery
	}
	if opts.FallbackAfter <= 0 {
		opts.FallbackAfter = DefaultFallbackAfter
	}
	if opts.RetryMin <= 0 {
		opts.RetryMin = retry.DefaultMin
	}
	if opts.RetryMax < opts.RetryMin {
		opts.RetryMax = max(retry.DefaultMax, opts.RetryMin)
	}
	m := &Manager{
		opts: opts, log: opts.Log, dbs: map[string]*dbState{},
		scans: scans{due: make(chan struct{}, 1)},
		limit: make(chan struct{}, opts.MaxParallelLoads),
		queue: newBuildQueue(2 * opts.MaxParallelLoads),
	}
	m.metrics = newMetrics(opts.Registerer)
	m.dbm = newDBMetrics(opts.Registerer)
	ropts := opts.Repair
	ropts.Store, ropts.Cache, ropts.Log, ropts.Registerer = opts.Store, opts.Cache, opts.Log, opts.Registerer
	m.rep = repair.New(ropts, partitionHost{m})
	lopts := opts.Loader
	lopts.Limit, lopts.Log = m.limit, opts.Log
	m.build = builder.New(builder.Options{Source: opts.Source, Store: opts.Store, Loader: lopts, Cache: opts.Cache,
		Format: func(db string) parquetkv.Format { return m.plan.Format(db) }, CopyPartition: opts.Hooks.CopyPartition,
		Log: opts.Log, Registerer: opts.Registerer})
	m.replicas = replica.New(replicaHost{m}, opts.Store, opts.Cache, opts.Log)
	m.reload = reload.New(reloadHost{m}, &m.wg)
	m.removed = dbremoval.New(opts.Hooks.DBRemoved, opts.Log, &m.wg)
	m.plan = planner.New(planner.Options{Source: opts.Source, Store: opts.Store, Log: opts.Log,
		SettleTime: opts.SettleTime, Pin: opts.Hooks.Pin, Now: opts.Now}, plannerHost{m})
	m.view.Store(&view{})
	return m, nil
}

// Refresh asks for a re-scan of the source soon (SIGHUP). That scan also
// loads again at once the versions failed by a transient error, whatever
// their backoff.
func (m *Manager) Refresh() {
	m.retryNow.Store(true)
	m.scans.kick()
}

// Run scans the source, then again every RefreshPeriod and on Refresh,
// and removes replaced versions after their retention. It returns when ctx
// is done, after stopping loads and closing every version.
func (m *Manager) Run(ctx context.Context) error {
	m.mu.Lock()
	m.ctx = ctx
	m.mu.Unlock()
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		m.rep.Run(ctx)
	}()
	m.Scan(ctx)
	m.mu.Lock()
	m.start.scanned = true
	m.mu.Unlock()
	var tick <-chan time.Time
	if m.opts.RefreshPeriod > 0 {
		t := time.NewTicker(m.opts.RefreshPeriod)
		defer t.Stop()
		tick = t.C
	}
	sweep := time.NewTicker(min(max(m.opts.Retention/4, 5*time.Millisecond), time.Second))
	defer sweep.Stop()
	for {
		select {
		case <-ctx.Done():
			m.shutdown()
			return nil
		case <-tick:
			m.Scan(ctx)
		case <-m.scans.due:
			m.Scan(ctx)
		case <-sweep.C:
			m.sweep()
		}
	}
}

// Scan lists the source once and starts what it calls for: loads of new
// newest versions, removal of dbs gone from the source, deletion of local
// data nobody wants. Source errors are logged; what is served stays.
func (m *Manager) Scan(ctx context.Context) {
	m.scanMu.Lock()
	defer m.scanMu.Unlock()
	m.mu.Lock()
	m.forceRetry = m.retryNow.Swap(false)
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		m.forceRetry = false
		m.armRetriesLocked()
		m.mu.Unlock()
	}()
	dbs, err := m.opts.Source.DBs(ctx)
	if err != nil {
		m.log.Error("listing source failed; keeping what is served", zap.String("source", m.opts.Source.String()), zap.Error(err))
		m.sourceDown(err)
		return
	}
	m.source.set(nil, time.Time{})
	seen := map[string]bool{}
	for _, db := range dbs {
		seen[db] = true
		versions, err := m.opts.Source.Versions(ctx, db)
		if err != nil {
			m.log.Error("listing versions failed", zap.String("db", db), zap.Error(err))
			continue
		}
		m.mu.Lock()
		m.dbs.get(db) // known from now on, planned or not
		m.mu.Unlock()
		p, ok := m.plan.Plan(ctx, db, versions)
		if !ok {
			continue
		}
		m.mu.Lock()
		m.considerLocked(db, p)
		m.mu.Unlock()
	}
	m.mu.Lock()
	for db, d := range m.dbs {
		if !seen[db] && !d.gone {
			m.log.Info("db removed from the source; no longer serving it", zap.String("db", db))
			m.removeDBLocked(db, d)
		}
	}
	m.removed.Check(m.ctx, seen, true, m.dbs.empty) // storaged/dbremoval
	setPinGauges(m.dbs, m.plan, m.metrics)
	m.publishLocked()
	m.mu.Unlock()
	m.cleanLocalStore()
}

// considerLocked steers db towards p: it loads the target, and the
// fallback while nothing of db is active and either the target has waited
// for the cluster for FallbackAfter (another node may have failed it) or
// the fallback is complete in the local store and the target is not (a
// start serves at once what it served before). Versions that are neither,
// nor the active one, stop loading or are removed; failed versions newer
// than those planned stay to show their reason.
func (m *Manager) considerLocked(db string, p planner.Plan) {
	d := m.dbs.get(db)
	d.gone = false
	// A failed version is forgotten once no scan would reach it: gone
	// from the source, below the versions planned, or older than the
	// active one; a pinned one stays to show why the pin does not serve.
	lowest := ""
	if p.Fallback != nil {
		lowest = p.Fallback.Name
	} else if p.Target != nil {
		lowest = p.Target.Name
	}
	for name, o := range d.versions {
		if o.phase == failed && name != p.Pin && (!p.Listed[name] || name < lowest || d.anyActive() && name < d.current) {
			m.forgetLocked(db, d, o)
		}
	}
	if p.Target == nil {
		m.publishLocked()
		return
	}
	want := []*planner.Candidate{p.Target}
	if f := p.Fallback; f != nil && !d.anyActive() {
		waited := false
		if tv := d.versions[p.Target.Name]; tv != nil && tv.phase == loaded {
			left := tv.loadedAt.Add(m.opts.FallbackAfter).Sub(m.opts.Now())
			if waited = left <= 0; !waited {
				m.scans.after(left)
			}
		}
		if waited || (f.Local && !p.Target.Local) {
			want = append(want, f)
		}
	}
	wanted := func(name string) bool {
		for _, c := range want {
			if c.Name == name {
				return true
			}
		}
		return false
	}
	for name, o := range d.versions {
		if wanted(name) {
			continue
		}
		switch o.phase {
		case building, activateOnLoad:
			m.log.Info("version superseded while loading; cancelling", zap.String("db", db), zap.String("version", name))
			m.cancelLocked(db, o)
		case loaded:
			m.removeVersionLocked(db, d, o)
		}
	}
	for _, c := range want {
		m.ensureLocked(db, d, c)
	}
}

// anyActive reports whether some version of d answers unpinned
// requests.
func (d *dbState) anyActive() bool {
	cur := d.versions[d.current]
	return cur != nil && cur.phase == active
}

// ensureLocked makes c loaded (or loading) from its current files: it
// starts a load, follows a version still held, or loads again a version
// whose files changed since it was loaded.
func (m *Manager) ensureLocked(db string, d *dbState, c *planner.Candidate) {
	vs := d.versions[c.Name]
	switch {
	case vs == nil:
	case vs.phase == failed:
		if !source.SameFiles(vs.files, c.Files) {
			m.forgetLocked(db, d, vs) // the source changed: try again
			break
		}
		if !m.retryDueLocked(vs) {
			return
		}
		m.log.Info("loading again a version failed by a transient error", zap.String("db", db),
			zap.String("version", c.Name), zap.Int("retry", vs.retry.Failures))
		m.metrics.retries.Inc()
		m.forgetLocked(db, d, vs)
		m.startLoadLocked(db, d, c.Name, c.Files, c.Local)
		d.versions[c.Name].retry.Failures = vs.retry.Failures // its backoff goes on from there
		return
	case vs.phase.leaving():
		vs.reload = true // loaded again once it is gone
		return
	case !source.SameFiles(vs.files, c.Files) && vs.phase.servable():
		startRebuildLocked(m, db, vs, c.Files) // rebuild.go
		if vs.phase == superseded {
			// The source went back to it: its loaded copy serves until
			// the rebuilt one replaces it.
			m.activateLocked(db, d, vs)
		}
		return
	case vs.phase.servable() && m.reload.Pending(dbver.Of(db, c.Name)):
		// The files went back to the ones it serves.
		stopRebuildLocked(m, db, vs)
		if m.reload.Forget(dbver.Of(db, c.Name)) {
			vs.reason = ""
		}
		if vs.phase == superseded {
			m.activateLocked(db, d, vs)
		}
		return
	case !source.SameFiles(vs.files, c.Files):
		m.log.Warn("version's files changed while it was loading; loading it again",
			zap.String("db", db), zap.String("version", c.Name), zap.Int("files_before", len(vs.files)), zap.Int("files_now", len(c.Files)))
		m.metrics.reloads.Inc()
		vs.reload = true
		if vs.phase.loading() {
			m.cancelLocked(db, vs)
		} else {
			m.removeVersionLocked(db, d, vs)
		}
		return
	case vs.phase == superseded:
		// The source went back to a version still held (or the db falls
		// back on it): follow it.
		m.activateLocked(db, d, vs)
		return
	default:
		return
	}
	m.startLoadLocked(db, d, c.Name, c.Files, c.Local)
	if c.Local {
		m.start.track(d.versions[c.Name])
	}
}

// Activate makes db/version the active version (cluster mode, with
// Hooks.Gated, once the version is complete). A version still loading
// becomes active when it finishes.
func (m *Manager) Activate(db, version string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	d := m.dbs[db]
	if d == nil || d.versions[version] == nil {
		return fmt.Errorf("versions: activating %s/%s: %w", db, version, ErrVersionNotHeld)
	}
	vs := d.versions[version]
	switch vs.phase {
	case building:
		m.toLocked(db, vs, activateOnLoad)
	case activateOnLoad, active:
	case loaded, superseded:
		m.activateLocked(db, d, vs)
	case cancelling:
		return fmt.Errorf("versions: activating %s/%s: its load was cancelled: %w", db, version, ErrVersionNotHeld)
	case retiring, removing:
		return fmt.Errorf("versions: activating %s/%s: being removed: %w", db, version, ErrVersionNotHeld)
	default:
		return fmt.Errorf("versions: activating %s/%s: %w", db, version, ErrVersionNotHeld)
	}
	return nil
}

// activateLocked is where a version becomes active: one snapshot swap
// makes it the answer to every request that pins no version.
func (m *Manager) activateLocked(db string, d *dbState, vs *vstate) {
	old := d.versions[d.current]
	if !m.toLocked(db, vs, active) {
		return
	}
	now := m.opts.Now()
	if old != nil && old != vs && old.phase == active {
		m.toLocked(db, old, superseded)
		old.v.lastUsed.Store(now.UnixNano())
		old.v.current.Store(false)
	}
	vs.activated = now
	vs.v.current.Store(true)
	d.current = vs.name
	m.publishLocked()
	m.log.Info("version active", zap.String("db", db), zap.String("version", vs.name))
}

// sweep removes replaced versions unused for the retention period.
func (m *Manager) sweep() {
	now := m.opts.Now().UnixNano()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.removed.Check(m.ctx, nil, false, m.dbs.empty)
	for db, d := range m.dbs {
		for _, vs := range d.versions {
			if vs.phase == superseded && now-vs.v.lastUsed.Load() >= int64(m.opts.Retention) {
				m.log.Info("version unused for the retention period; removing", zap.String("db", db), zap.String("version", vs.name))
				m.removeVersionLocked(db, d, vs)
			}
		}
	}
}

// publishLocked rebuilds the request path's snapshot and the gauges. A
// db whose servable versions and current one are those of its view in
// the last snapshot keeps that view (d.view): a start with many dbs
// publishes a few times for each of its versions, and building every
// db's view each time made it cost the square of the dbs.
func (m *Manager) publishLocked() {
	vw := make(view, len(m.dbs))
	var counts [len(stateNames)]float64
	for db, d := range m.dbs {
		var cur *Version
		if c := d.versions[d.current]; c != nil && c.phase == active {
			cur = c.v
		}
		same, servable := d.view != nil && d.view.current == cur, 0
		for name, vs := range d.versions {
			counts[stateIndex(healthState(vs.phase))]++
			if vs.phase.servable() || vs.phase == retiring { // pinned requests still find it
				servable++
				if same && d.view.byName[name] != vs.v {
					same = false
				}
			}
		}
		if same && servable != len(d.view.byName) {
			same = false
		}
		for _, name := range m.plan.Settling(db) {
			if d.versions[name] == nil {
				counts[stateIndex(wire.StateSettling)]++
			}
		}
		if !same {
			dv := &dbView{byName: make(map[string]*Version, servable), current: cur}
			for name, vs := range d.versions {
				if vs.phase.servable() || vs.phase == retiring {
					dv.byName[name] = vs.v
				}
			}
			d.view = dv
		}
		if len(d.view.byName) > 0 {
			vw[db] = d.view
		}
	}
	m.view.Store(&vw)
	m.metrics.setStates(counts)
}

func (m *Manager) shutdown() {
	m.mu.Lock()
	m.scans.stop()
	for db, d := range m.dbs {
		for _, vs := range d.versions {
			m.cancelLocked(db, vs)
		}
	}
	m.mu.Unlock()
	m.wg.Wait()
	m.mu.Lock()
	defer m.mu.Unlock()
	for db, d := range m.dbs {
		for _, vs := range d.versions {
			m.reload.Forget(dbver.Of(db, vs.name))
			if vs.phase.servable() {
				vs.v.closing.Store(true)
				waitUnused(vs.v, time.Second)
				vs.v.close()
			}
		}
	}
	m.dbs = map[string]*dbState{}
	m.plan.Reset()
	m.publishLocked()
}

// waitUnused waits until no request uses v, or timeout.
func waitUnused(v *Version, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for v.refs.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
}
