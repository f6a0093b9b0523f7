package versions

import (
	"time"

	"go.uber.org/zap"

	"spangle/shared/source"
	"spangle/storaged/loader"
	"spangle/storaged/planner"
)

// plannerHost is the Manager as storaged/planner sees it (planner.Host):
// what it knows of a version, read under the manager's lock.
type plannerHost struct{ m *Manager }

func (h plannerHost) Version(db, name string) planner.Known {
	m := h.m
	m.mu.Lock()
	defer m.mu.Unlock()
	d := m.dbs[db]
	if d == nil || d.versions[name] == nil {
		return planner.Known{}
	}
	vs := d.versions[name]
	if vs.phase == failed {
		return planner.Known{Any: true, Files: vs.files, Broken: !m.retryDueLocked(vs)}
	}
	// A cancelled load still counts: ensureLocked marks it to load again.
	return planner.Known{Any: true, Held: vs.phase != retiring && vs.phase != removing, Files: vs.files}
}

// Fail marks db/version failed because its files cannot all be read (or
// its _SUCCESS cannot be used); it is tried again once they list without
// error.
func (h plannerHost) Fail(db, name string, err error) {
	m := h.m
	m.mu.Lock()
	defer m.mu.Unlock()
	d := m.dbs.get(db)
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
	m.dbm.loaded(db, "error", loader.Result{}, 0)
	m.publishLocked()
	m.log.Error("version has a data file that cannot be read; not loading it",
		zap.String("db", db), zap.String("version", name), zap.Error(err))
}

func (h plannerHost) Rescan(d time.Duration) {
	h.m.mu.Lock()
	defer h.m.mu.Unlock()
	h.m.scans.after(d)
}

func (h plannerHost) RetryFailed(db string) {
	m := h.m
	m.mu.Lock()
	defer m.mu.Unlock()
	d := m.dbs[db]
	if d == nil {
		return
	}
	for _, vs := range d.versions {
		if vs.phase == failed {
			m.forgetLocked(db, d, vs)
		}
	}
}

// empty reports whether nothing of db is left: no state, or no version.
func (t dbTable) empty(db string) bool {
	d := t[db]
	return d == nil || len(d.versions) == 0
}

// get returns db's state, created if new.
func (t dbTable) get(db string) *dbState {
	d := t[db]
	if d == nil {
		d = &dbState{versions: map[string]*vstate{}}
		t[db] = d
	}
	return d
}

// numPartitions is the partition count of a version's files, 0 when they
// do not make a version (the reason says why).
func numPartitions(files []source.File, formats []loader.Format) int {
	n, err := loader.NumPartitions(files, formats)
	if err != nil {
		return 0
	}
	return n
}
