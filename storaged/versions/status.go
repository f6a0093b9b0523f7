package versions

import (
	"fmt"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"spangle/shared/parquetkv"
	"spangle/shared/source"
	"spangle/shared/wire"
	"spangle/storaged/planner"
)

// healthState names a phase as /healthz does. A loaded version waiting for
// Activate is still BUILDING for clients; a replaced one kept for pinned
// requests, or one whose removal began, is REMOVING.
func healthState(p phase) string {
	switch p {
	case active:
		return wire.StateActive
	case superseded, retiring, removing:
		return wire.StateRemoving
	case failed:
		return wire.StateError
	}
	return wire.StateBuilding
}

// Health returns every known version's state: {"<db>": {"<version>": ...}}.
func (m *Manager) Health() map[string]map[string]wire.Health {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	out := map[string]map[string]wire.Health{}
	for db, d := range m.dbs {
		vs := map[string]wire.Health{}
		for name, v := range d.versions {
			h := wire.Health{State: healthState(v.phase), Reason: v.reason, Progress: progressOf(v, now)}
			if v.phase == loaded {
				h.Reason = "loaded; waiting to become active"
			}
			if bad, why := m.rep.Corrupt(db, name); bad != nil {
				h.CorruptPartitions = bad
				h.Reason = joinReasons(h.Reason, why)
			}
			vs[name] = h
		}
		ps := m.plan.Status(db)
		names, why := heldBack(d, ps)
		for _, name := range names {
			vs[name] = wire.Health{State: wire.StateHeld, Reason: why}
		}
		for name, why := range ps.Awaiting {
			if d.versions[name] == nil {
				vs[name] = wire.Health{State: wire.StateBuilding, Reason: why}
			}
		}
		for name, s := range ps.Settling {
			why := s.Reason
			if h, ok := vs[name]; ok {
				h.Reason = joinReasons(h.Reason, "its source files changed; "+why)
				vs[name] = h
			} else {
				vs[name] = wire.Health{State: wire.StateSettling, Reason: why}
			}
		}
		if why := pinReason(d, ps); why != "" {
			// A marker not followed is an error of the db, shown under
			// the marker's name, which no version can have.
			vs[source.PinFile] = wire.Health{State: wire.StateError, Reason: why}
		}
		if why := ps.FormatError; why != "" {
			vs[parquetkv.FormatFile] = wire.Health{State: wire.StateError, Reason: why}
		}
		out[db] = vs
	}
	return out
}

// Status returns the status page's view of every db, or of one when db
// is not "".
func (m *Manager) Status(db string) map[string]wire.DBStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	out := map[string]wire.DBStatus{}
	for name, d := range m.dbs {
		if db != "" && name != db {
			continue
		}
		ds := wire.DBStatus{Current: d.current, Versions: map[string]wire.VersionStatus{}}
		ps := m.plan.Status(name)
		ds.Pin, ds.PinGeneration, ds.PinError = ps.Pin, ps.PinGeneration, pinReason(d, ps)
		ds.FormatError = ps.FormatError
		if cur := d.versions[d.current]; cur == nil || cur.phase != active {
			ds.Current = ""
		}
		for vname, vs := range d.versions {
			st := wire.VersionStatus{State: healthState(vs.phase), Reason: vs.reason,
				NumPartitions: numPartitions(vs.files, m.formats(name)), Partitions: []int{},
				LoadSeconds: vs.loadTook.Seconds(), Activated: vs.activated, Progress: progressOf(vs, now)}
			if vs.v != nil {
				st.Partitions = vs.v.Held()
				st.Created = vs.v.Created
			}
			if bad, why := m.rep.Corrupt(name, vname); bad != nil {
				st.CorruptPartitions = bad
				st.Reason = joinReasons(st.Reason, why)
			}
			ds.Versions[vname] = st
		}
		names, why := heldBack(d, ps)
		for _, vname := range names {
			ds.Versions[vname] = wire.VersionStatus{State: wire.StateHeld, Reason: why, Partitions: []int{}}
		}
		for vname, why := range ps.Awaiting {
			if d.versions[vname] == nil {
				ds.Versions[vname] = wire.VersionStatus{State: wire.StateBuilding, Reason: why, Partitions: []int{}}
			}
		}
		for vname, s := range ps.Settling {
			why := s.Reason
			if st, ok := ds.Versions[vname]; ok {
				st.Reason = joinReasons(st.Reason, "its source files changed; "+why)
				ds.Versions[vname] = st
			} else {
				ds.Versions[vname] = wire.VersionStatus{State: wire.StateSettling, Reason: why,
					NumPartitions: numPartitions(s.Files, m.formats(name)), Partitions: []int{}}
			}
		}
		out[name] = ds
	}
	return out
}

// joinReasons joins two reasons of one version, either possibly empty.
func joinReasons(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "; " + b
}

// DBNames returns the dbs the manager knows, sorted.
func (m *Manager) DBNames() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	names := make([]string, 0, len(m.dbs))
	for db := range m.dbs {
		names = append(names, db)
	}
	sort.Strings(names)
	return names
}

type metrics struct {
	loads       *prometheus.CounterVec
	loadSeconds prometheus.Histogram
	states      *prometheus.GaugeVec
	reloads     prometheus.Counter
	pinned      prometheus.Gauge
	pinErrors   prometheus.Gauge
	retries     prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		loads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "spangle_storaged_version_loads_total",
			Help: "Versions made servable, by how: loaded from the source, reused from the local store, or error.",
		}, []string{"result"}),
		loadSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "spangle_storaged_version_load_duration_seconds",
			Help:    "Time to load a version from the source.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 16),
		}),
		states: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "spangle_storaged_versions",
			Help: "Versions known to the node, by state.",
		}, []string{"state"}),
		reloads: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "spangle_storaged_version_reloads_total",
			Help: "Versions loaded again because their source files changed after they were loaded.",
		}),
		pinned: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "spangle_storaged_pinned_dbs",
			Help: "Dbs held at a version by a _PIN marker (a rollback or a freeze).",
		}),
		pinErrors: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "spangle_storaged_pin_errors",
			Help: "Dbs whose _PIN marker is not followed: malformed, naming a version not in the source, or one that failed to load.",
		}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "spangle_storaged_version_load_retries_total",
			Help: "Loads started again, with the same files, after a transient error (source unavailable, object changed, local disk).",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.loads, m.loadSeconds, m.states, m.reloads, m.pinned, m.pinErrors, m.retries)
	}
	return m
}

func (m *metrics) setStates(counts map[string]float64) {
	for _, s := range []string{wire.StateSettling, wire.StateBuilding, wire.StateActive, wire.StateRemoving, wire.StateError} {
		m.states.WithLabelValues(s).Set(counts[s])
	}
}

// heldBack returns the versions of d held back by its pin that the
// manager does not know otherwise (a version it still holds shows its
// own phase), with the reason to show.
func heldBack(d *dbState, ps planner.DBStatus) (names []string, reason string) {
	for _, v := range ps.Newer {
		if d.versions[v] == nil {
			names = append(names, v)
		}
	}
	return names, wire.HeldReason(ps.Pin)
}

// pinReason says why d's pin is not followed or the pinned version does
// not serve; "" when neither.
func pinReason(d *dbState, ps planner.DBStatus) string {
	reason := ps.PinError
	if vs := d.versions[ps.Pin]; ps.Pin != "" && vs != nil && vs.phase == failed {
		reason = joinReasons(reason, fmt.Sprintf("pinned version %q failed to load: %s", ps.Pin, vs.reason))
	}
	return reason
}

// setPinGaugesLocked counts the pinned dbs and the pins not followed.
func (m *Manager) setPinGaugesLocked() {
	var pinned, bad float64
	for db, d := range m.dbs {
		ps := m.plan.Status(db)
		if ps.Pin != "" {
			pinned++
		}
		if pinReason(d, ps) != "" {
			bad++
		}
	}
	m.metrics.pinned.Set(pinned)
	m.metrics.pinErrors.Set(bad)
}
