package server

import (
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	sharedmetrics "spangle/shared/metrics"
)

// metrics are the server's Prometheus series. Counters for the statuses
// the server sends are resolved once, so counting costs no label lookup.
type metrics struct {
	requests *prometheus.CounterVec
	byCode   map[int]prometheus.Counter
	ok       prometheus.Counter // byCode[200], nearly every request's
	latency  prometheus.Histogram
}

var knownCodes = []int{200, 400, 404, 405, 410, 414, 421, 500, 503}

func newMetrics(reg prometheus.Registerer, inflight *atomic.Int64) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "spangle_storaged_requests_total",
			Help: "HTTP requests answered, by status code.",
		}, []string{"code"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "spangle_storaged_request_duration_seconds",
			Help:    "Time to answer a request.",
			Buckets: prometheus.ExponentialBuckets(25e-6, 2, 16),
		}),
		byCode: map[int]prometheus.Counter{},
	}
	inflightG := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "spangle_storaged_inflight_requests",
		Help: "Key lookups in progress.",
	}, func() float64 { return float64(inflight.Load()) })
	if err := sharedmetrics.Register(reg, m.requests, m.latency, inflightG); err != nil {
		return nil, fmt.Errorf("server: registering metrics: %w", err)
	}
	for _, code := range knownCodes {
		m.byCode[code] = m.requests.WithLabelValues(strconv.Itoa(code))
	}
	m.ok = m.byCode[200]
	return m, nil
}

func (m *metrics) observe(code int, took time.Duration) {
	c, ok := m.ok, code == 200
	if !ok {
		c, ok = m.byCode[code]
	}
	if !ok {
		c = m.requests.WithLabelValues(strconv.Itoa(code))
	}
	c.Inc()
	m.latency.Observe(took.Seconds())
}
