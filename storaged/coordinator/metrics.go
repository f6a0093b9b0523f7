package coordinator

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	sharedmetrics "spangle/shared/metrics"
)

// metrics say whether the leader can decide: a leader whose rounds fail
// leaves the cluster without re-replication, rebalancing and new pins.
type metrics struct {
	roundsFailed prometheus.Counter
	failing      prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		roundsFailed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "spangle_storaged_leader_rounds_failed_total",
			Help: "Leader rounds that ended without deciding (the error is on the status page and logged at warn).",
		}),
		failing: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "spangle_storaged_leader_failing",
			Help: "1 while this node leads and its last round failed to decide, else 0.",
		}),
	}
	if reg == nil {
		return m, nil
	}
	if err := sharedmetrics.Register(reg, m.roundsFailed, m.failing); err != nil {
		return nil, fmt.Errorf("coordinator: registering metrics: %w", err)
	}
	return m, nil
}
