package server

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/sony/gobreaker/v2"

	sharedmetrics "spangle/shared/metrics"
)

// metrics are one Server's, in the registry its Options give (never the
// global one), so that several servers can live in one process (tests run
// whole clusters in one).
type metrics struct {
	reg       *prometheus.Registry
	requests  *prometheus.CounterVec
	byCode    map[int]prometheus.Counter // read-only after newMetrics
	latency   prometheus.Histogram
	hedges    prometheus.Counter
	hedgesWon prometheus.Counter
	breaker   *prometheus.CounterVec
	hits      prometheus.Counter
	misses    prometheus.Counter
	switches  *prometheus.CounterVec
	dials     [2]prometheus.Counter // connections dialled to storaged: made, failed
	handler   http.Handler
}

func newMetrics(reg *prometheus.Registry) (*metrics, error) {
	m := &metrics{
		reg: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "spangle_routerd_requests_total",
			Help: "Key lookups answered, by HTTP status.",
		}, []string{"code"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "spangle_routerd_request_duration_seconds",
			Help:    "Time to answer a key lookup.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1},
		}),
		hedges: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "spangle_routerd_hedges_started_total",
			Help: "Requests started to another replica because the first was slow.",
		}),
		hedgesWon: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "spangle_routerd_hedges_won_total",
			Help: "Hedged requests whose answer was the one returned.",
		}),
		breaker: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "spangle_routerd_breaker_transitions_total",
			Help: "Circuit breaker state changes, by node and new state.",
		}, []string{"node", "to"}),
		hits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "spangle_routerd_cache_hits_total",
			Help: "Lookups answered from the hot-key cache.",
		}),
		misses: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "spangle_routerd_cache_misses_total",
			Help: "Lookups not found in the hot-key cache.",
		}),
		switches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "spangle_routerd_version_switches_total",
			Help: "Times a db started serving another version: a newer one, or the one a pin names.",
		}, []string{"db"}),
	}
	dials := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "spangle_routerd_upstream_dials_total",
		Help: "Connections dialled to storaged nodes (TLS handshake included), by result: ok or failed. Kept alive, they should be few.",
	}, []string{"result"})
	m.dials = [2]prometheus.Counter{dials.WithLabelValues("ok"), dials.WithLabelValues("failed")}
	if err := sharedmetrics.Register(reg, m.requests, m.latency, m.hedges, m.hedgesWon, m.breaker, m.hits, m.misses, m.switches, dials); err != nil {
		return nil, fmt.Errorf("server: registering metrics: %w", err)
	}
	m.byCode = map[int]prometheus.Counter{}
	for _, c := range []int{200, 400, 404, 405, 410, 414, 499, 502, 503, 504} {
		m.byCode[c] = m.requests.WithLabelValues(strconv.Itoa(c))
	}
	m.handler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})
	return m, nil
}

// observe counts one lookup.
func (m *metrics) observe(code int, seconds float64) {
	c := m.byCode[code]
	if c == nil {
		c = m.requests.WithLabelValues(strconv.Itoa(code))
	}
	c.Inc()
	m.latency.Observe(seconds)
}

// dialled counts one connection dialled to storaged.
func (m *metrics) dialled(err error) {
	if err != nil {
		m.dials[1].Inc()
		return
	}
	m.dials[0].Inc()
}

func (m *metrics) breakerChanged(addr string, _, to gobreaker.State) {
	m.breaker.WithLabelValues(addr, to.String()).Inc()
}
