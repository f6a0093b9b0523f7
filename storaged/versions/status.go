package versions

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

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

// joinReasons joins two reasons of one version, either possibly empty.
func joinReasons(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "; " + b
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

// stateNames are the states the versions gauge counts, by stateIndex.
var stateNames = [...]string{wire.StateSettling, wire.StateBuilding, wire.StateActive, wire.StateRemoving, wire.StateError}

// stateIndex is s's place in stateNames; an unknown state counts as an
// error.
func stateIndex(s string) int {
	for i, n := range stateNames {
		if n == s {
			return i
		}
	}
	return len(stateNames) - 1
}

func (m *metrics) setStates(counts [len(stateNames)]float64) {
	for i, s := range stateNames {
		m.states.WithLabelValues(s).Set(counts[i])
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

// setPinGauges counts the pinned dbs and the pins not followed. Called
// with Manager.mu held (dbs is guarded by it).
func setPinGauges(dbs dbTable, plan *planner.Planner, met *metrics) {
	var pinned, bad float64
	for db, d := range dbs {
		ps := plan.Status(db)
		if ps.Pin != "" {
			pinned++
		}
		if pinReason(d, ps) != "" {
			bad++
		}
	}
	met.pinned.Set(pinned)
	met.pinErrors.Set(bad)
}
