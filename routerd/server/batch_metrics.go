package server

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"spangle/shared/wire"
)

// batchMetrics count batch lookups (POST /<db>): the batches by status
// and how long they took, their sizes, what became of each key, and the
// keys asked again of another replica because one did not hold them.
type batchMetrics struct {
	batches  *prometheus.CounterVec
	latency  prometheus.Histogram
	keys     prometheus.Histogram
	outcomes *prometheus.CounterVec
	found    prometheus.Counter
	missing  prometheus.Counter
	failed   prometheus.Counter
	retried  prometheus.Counter
	// refused counts bodies not read to the end: "memory" when the
	// router held too many batch bytes, "timeout" when the body was late.
	refused *prometheus.CounterVec
}

func newBatchMetrics(reg prometheus.Registerer, budget *wire.BatchBudget) *batchMetrics {
	m := &batchMetrics{
		batches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "spangle_routerd_batches_total",
			Help: "Batch lookups (POST /<db>) answered, by HTTP status.",
		}, []string{"code"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "spangle_routerd_batch_duration_seconds",
			Help:    "Time to answer a batch lookup.",
			Buckets: []float64{.00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1},
		}),
		keys: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "spangle_routerd_batch_keys",
			Help:    "Keys per batch lookup.",
			Buckets: prometheus.ExponentialBuckets(1, 4, 7),
		}),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "spangle_routerd_batch_key_outcomes_total",
			Help: "Distinct keys of batch lookups, by outcome: found, missing, failed.",
		}, []string{"outcome"}),
		retried: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "spangle_routerd_batch_keys_retried_total",
			Help: "Keys of batch lookups asked of another replica because one did not hold their partition.",
		}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "spangle_routerd_batch_bodies_refused_total",
			Help: "Batch bodies not read to the end, by reason: memory (batch_read_bytes held already: 503), timeout (not in within batch_read_timeout: 408).",
		}, []string{"reason"}),
	}
	held := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "spangle_routerd_batch_body_bytes",
		Help: "Bytes of batch bodies held now (reserved before they are read; bounded by batch_read_bytes).",
	}, func() float64 { return float64(budget.Used()) })
	reg.MustRegister(m.batches, m.latency, m.keys, m.outcomes, m.retried, m.refused, held)
	m.found = m.outcomes.WithLabelValues("found")
	m.missing = m.outcomes.WithLabelValues("missing")
	m.failed = m.outcomes.WithLabelValues("failed")
	return m
}

func (m *batchMetrics) observe(code int, took time.Duration) {
	m.batches.WithLabelValues(strconv.Itoa(code)).Inc()
	m.latency.Observe(took.Seconds())
}
