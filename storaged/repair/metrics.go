package repair

import "github.com/prometheus/client_golang/prometheus"

// metrics are the series of the local store's checks and mends.
type metrics struct {
	corrupt    *prometheus.CounterVec
	repairing  prometheus.Gauge
	repairs    *prometheus.CounterVec
	scrubBytes prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) metrics {
	m := metrics{
		corrupt: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "spangle_storaged_partitions_corrupt_total",
			Help: "Partitions of the local store found with a corrupt block, by what found it: a lookup or the scrub.",
		}, []string{"found_by"}),
		repairing: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "spangle_storaged_partitions_repairing",
			Help: "Partitions found corrupt and not yet replaced by a rebuilt copy.",
		}),
		repairs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "spangle_storaged_partition_repairs_total",
			Help: "Rebuilds of corrupt partitions, by where the new copy came from (peer, source) or error.",
		}, []string{"result"}),
		scrubBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "spangle_storaged_scrub_bytes_total",
			Help: "Bytes of the local store read back and checked by the scrub.",
		}),
	}
	// Every series shows from the start, zero until something happens.
	for _, by := range []string{FoundByLookup, FoundByScrub} {
		m.corrupt.WithLabelValues(by)
	}
	for _, r := range []string{FromPeer, FromSource, "error"} {
		m.repairs.WithLabelValues(r)
	}
	if reg != nil {
		reg.MustRegister(m.corrupt, m.repairing, m.repairs, m.scrubBytes)
	}
	return m
}
