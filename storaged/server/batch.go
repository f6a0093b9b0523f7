package server

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"spangle/shared/wait"
	"spangle/shared/wire"
	"spangle/storaged/versions"
)

// batchMetrics count batch lookups (POST /<db>): the batches by status,
// their sizes, and what became of each key.
type batchMetrics struct {
	batches  *prometheus.CounterVec
	keys     prometheus.Histogram
	outcomes *prometheus.CounterVec
	found    prometheus.Counter
	missing  prometheus.Counter
	failed   prometheus.Counter
}

func newBatchMetrics(reg prometheus.Registerer) (*batchMetrics, error) {
	m := &batchMetrics{
		batches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "spangle_storaged_batches_total",
			Help: "Batch lookups (POST /<db>) answered, by HTTP status.",
		}, []string{"code"}),
		keys: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "spangle_storaged_batch_keys",
			Help:    "Distinct keys per batch lookup.",
			Buckets: prometheus.ExponentialBuckets(1, 4, 7),
		}),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "spangle_storaged_batch_key_outcomes_total",
			Help: "Keys of batch lookups, by outcome: found, missing, failed.",
		}, []string{"outcome"}),
	}
	for _, c := range []prometheus.Collector{m.batches, m.keys, m.outcomes} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("server: registering batch metrics: %w", err)
		}
	}
	m.found = m.outcomes.WithLabelValues("found")
	m.missing = m.outcomes.WithLabelValues("missing")
	m.failed = m.outcomes.WithLabelValues("failed")
	return m, nil
}

var allowBatch = []string{"GET, HEAD, POST"}

// servePost serves a POST: a batch lookup when the path names a db.
func (s *Server) servePost(w http.ResponseWriter, r *http.Request) int {
	t, err := wire.ParsePath(r.URL.EscapedPath())
	if err != nil || t.HasKey {
		w.Header()["Allow"] = allowGetHead
		return httpError(w, r, http.StatusMethodNotAllowed, "POST only to /<db>, a batch lookup")
	}
	code := s.serveBatch(w, r, t.DB)
	s.batch.batches.WithLabelValues(strconv.Itoa(code)).Inc()
	return code
}

// serveBatch answers a batch lookup of db from one version: the pinned
// one, else the active one. It returns the status sent.
func (s *Server) serveBatch(w http.ResponseWriter, r *http.Request, db string) int {
	n := s.inflight.Add(1)
	defer s.inflight.Add(-1)
	if s.opts.MaxInflight > 0 && n > int64(s.opts.MaxInflight) {
		w.Header()["Retry-After"] = s.retryAfter
		return httpError(w, r, wire.StatusUnavailable, "overloaded")
	}
	keys, err := wire.ReadBatch(r.Body, s.opts.BatchLimits)
	if err != nil {
		return httpError(w, r, wire.BatchStatus(err), err.Error())
	}
	s.batch.keys.Observe(float64(len(keys)))
	if s.opts.Delay > 0 {
		if err := wait.Sleep(r.Context(), s.opts.Delay); err != nil {
			return httpError(w, r, wire.StatusUnavailable, "cancelled")
		}
	}
	v, code := s.acquire(w, r, db)
	if code != 0 {
		return code
	}
	a := wire.NewBatchAnswer(v.Name, len(keys))
	notHeld := 0
	for _, k := range keys {
		// Get appends to nil: each value is a copy of its own, since
		// the block cache reuses its blocks.
		val, err := v.Get(nil, []byte(k.Key))
		switch {
		case err == nil:
			if val == nil {
				val = []byte{}
			}
			a.Found[k.Raw] = val
		case errors.Is(err, versions.ErrNotFound):
			a.Missing = append(a.Missing, k.Raw)
		case errors.Is(err, versions.ErrPartitionNotHeld):
			a.Failed[k.Raw] = wire.ReasonNotHeld
			notHeld++
		case errors.Is(err, versions.ErrPartitionCorrupt):
			// As a GET of it: another replica answers it meanwhile.
			a.Failed[k.Raw] = wire.FailReason(wire.StatusUnavailable, "partition corrupt on this node; being rebuilt")
		default:
			s.log.Error("lookup failed", zap.String("db", db), zap.String("version", v.Name), zap.Error(err))
			a.Failed[k.Raw] = wire.FailReason(http.StatusInternalServerError, "lookup failed")
		}
	}
	v.Release()
	h := w.Header()
	h[wire.HeaderVersion] = v.HeaderVersion
	if notHeld > 0 && notHeld == len(keys) {
		// None of it here: as a single GET, so a router fails over.
		return httpError(w, r, wire.StatusNotHeld, "no partition of these keys held by this node")
	}
	s.batch.found.Add(float64(len(a.Found)))
	s.batch.missing.Add(float64(len(a.Missing)))
	s.batch.failed.Add(float64(len(a.Failed)))
	body, err := a.Encode()
	if err != nil {
		s.log.Error("batch answer", zap.Error(err))
		return httpError(w, r, http.StatusInternalServerError, "encoding the answer failed")
	}
	h["Last-Modified"] = v.HeaderLastModified
	h["Content-Type"] = jsonType
	h["Content-Length"] = s.contentLength(len(body))
	w.WriteHeader(http.StatusOK)
	w.Write(body)
	return http.StatusOK
}

var jsonType = []string{wire.ContentTypeJSON}
