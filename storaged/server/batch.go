package server

import (
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	sharedmetrics "spangle/shared/metrics"
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
	// refused counts bodies not read to the end: "memory" when the
	// node held too many batch bytes, "timeout" when the body was late.
	refused *prometheus.CounterVec
}

func newBatchMetrics(reg prometheus.Registerer, budget *wire.BatchBudget) (*batchMetrics, error) {
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
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "spangle_storaged_batch_bodies_refused_total",
			Help: "Batch bodies not read to the end, by reason: memory (batch_read_bytes held already: 503), timeout (not in within batch_read_timeout: 408).",
		}, []string{"reason"}),
	}
	held := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "spangle_storaged_batch_body_bytes",
		Help: "Bytes of batch bodies held now (reserved before they are read; bounded by batch_read_bytes).",
	}, func() float64 { return float64(budget.Used()) })
	if err := sharedmetrics.Register(reg, m.batches, m.keys, m.outcomes, m.refused, held); err != nil {
		return nil, fmt.Errorf("server: registering batch metrics: %w", err)
	}
	m.found = m.outcomes.WithLabelValues("found")
	m.missing = m.outcomes.WithLabelValues("missing")
	m.failed = m.outcomes.WithLabelValues("failed")
	return m, nil
}

// newBatchSlots bounds the batches looking their keys up at once to the
// CPUs. Batches are CPU work; run all at once, they share the CPUs and
// finish together, and for that whole while the node answers nothing,
// so a router waiting past a batch's deadline takes the busy node for a
// silent one (routerd's TestManyBusyBatches failed keys so). Taking
// turns, they finish one after another, each sooner, and the node keeps
// answering. A batch waits for its turn holding its max_inflight slot;
// single GETs do not wait.
func newBatchSlots() chan struct{} {
	return make(chan struct{}, runtime.GOMAXPROCS(0))
}

var allowBatch = []string{"GET, HEAD, POST"}

// servePost serves a POST: a batch lookup when the path names a db.
func (s *Server) servePost(w http.ResponseWriter, r *http.Request) int {
	path := r.URL.EscapedPath()
	t, err := wire.ParsePath(path)
	switch {
	case path == "/":
		w.Header()["Allow"] = allowGetHead
		return httpError(w, r, http.StatusMethodNotAllowed, "POST only to /<db>, a batch lookup")
	case err != nil:
		// As a GET of the same path: a bad name is the request's fault
		// whatever the method.
		code, msg := wire.StatusOf(err)
		return httpError(w, r, code, msg)
	case t.HasKey:
		w.Header()["Allow"] = allowGetHead
		return httpError(w, r, http.StatusMethodNotAllowed, "POST only to /<db>, a batch lookup")
	}
	code := s.serveBatch(w, r, t.DB)
	s.batch.batches.WithLabelValues(strconv.Itoa(code)).Inc()
	return code
}

// ServeBatch answers a batch lookup (POST /<db>) whose path is already
// parsed, as ServeHTTP answers it: the daemon serves batches through it
// on shared/h1fast's connection loop (h1fast.PostOptions), and the POSTs
// that loop leaves to net/http (chunked bodies, Expect, bodies over
// BatchMaxBytes) through ServeHTTP. It has h1fast.Post's signature.
func (s *Server) ServeBatch(w http.ResponseWriter, r *http.Request, t wire.Target) {
	start := monotonic()
	code := s.serveBatch(w, r, t.DB)
	s.batch.batches.WithLabelValues(strconv.Itoa(code)).Inc()
	s.observe(start, code)
}

// BatchMaxBytes is the batch body limit (batch_max_bytes): the largest
// Content-Length h1fast takes for ServeBatch.
func (s *Server) BatchMaxBytes() int64 {
	if n := s.batchRead.Limits.MaxBytes; n > 0 {
		return n
	}
	return wire.DefaultBatchMaxBytes
}

// serveBatch answers a batch lookup of db from one version: the pinned
// one, else the active one. It returns the status sent.
//
// The body is read first, within batch_read_timeout and the node's
// batch_read_bytes, and only then is an in-flight slot taken: a client
// that sends its body slowly holds no slot that lookups need.
func (s *Server) serveBatch(w http.ResponseWriter, r *http.Request, db string) int {
	keys, release, err := wire.ReadBatchRequest(w, r, s.batchRead)
	defer release()
	if err != nil {
		return s.batchReadFailed(w, r, err)
	}
	defer s.inflight.Add(-1)
	if code := s.admit(w, r); code != 0 {
		return code
	}
	s.batch.keys.Observe(float64(len(keys)))
	select {
	case s.batchSlots <- struct{}{}:
		defer func() { <-s.batchSlots }()
	case <-r.Context().Done():
		return httpError(w, r, wire.StatusUnavailable, "cancelled")
	}
	v, code := s.acquire(w, r, db)
	if code != 0 {
		return code
	}
	if wire.BatchAccepts(r.Header) {
		return s.serveBatchBinary(w, r, db, v, keys)
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

// serveBatchBinary answers a batch in the compact form a router asked
// for (wire.BatchAccepts): an entry for each key, in the request's
// order, each value copied once, from the block, into the answer.
// It releases v.
func (s *Server) serveBatchBinary(w http.ResponseWriter, r *http.Request, db string, v *versions.Version, keys []wire.BatchKey) int {
	var scratch, kb []byte
	body := wire.AppendBatchBinaryHead(make([]byte, 0, 64+len(keys)*128), v.Name, len(keys))
	found, missing, failed, notHeld := 0, 0, 0, 0
	for _, k := range keys {
		kb = append(kb[:0], k.Key...) // one buffer for every key
		val, err := v.Get(scratch[:0], kb)
		switch {
		case err == nil:
			scratch = val
			body = wire.AppendBatchFound(body, val)
			found++
			continue
		case errors.Is(err, versions.ErrNotFound):
			body = wire.AppendBatchMissing(body)
			missing++
			continue
		case errors.Is(err, versions.ErrPartitionNotHeld):
			body = wire.AppendBatchFailed(body, wire.ReasonNotHeld)
			notHeld++
		case errors.Is(err, versions.ErrPartitionCorrupt):
			body = wire.AppendBatchFailed(body, wire.FailReason(wire.StatusUnavailable, "partition corrupt on this node; being rebuilt"))
		default:
			s.log.Error("lookup failed", zap.String("db", db), zap.String("version", v.Name), zap.Error(err))
			body = wire.AppendBatchFailed(body, wire.FailReason(http.StatusInternalServerError, "lookup failed"))
		}
		failed++
	}
	v.Release()
	h := w.Header()
	h[wire.HeaderVersion] = v.HeaderVersion
	if notHeld > 0 && notHeld == len(keys) {
		return httpError(w, r, wire.StatusNotHeld, "no partition of these keys held by this node")
	}
	s.batch.found.Add(float64(found))
	s.batch.missing.Add(float64(missing))
	s.batch.failed.Add(float64(failed))
	h["Last-Modified"] = v.HeaderLastModified
	h["Content-Type"] = binaryType
	h["Content-Length"] = s.contentLength(len(body))
	w.WriteHeader(http.StatusOK)
	w.Write(body)
	return http.StatusOK
}

var binaryType = []string{wire.ContentTypeBatchBinary}

// batchReadFailed answers a batch whose body could not be read.
func (s *Server) batchReadFailed(w http.ResponseWriter, r *http.Request, err error) int {
	switch {
	case errors.Is(err, wire.ErrBatchBusy):
		s.batch.refused.WithLabelValues("memory").Inc()
		w.Header()["Retry-After"] = s.retryAfter
	case errors.Is(err, wire.ErrBatchTimeout):
		s.batch.refused.WithLabelValues("timeout").Inc()
		s.log.Debug("batch body not received in time", zap.String("remote", r.RemoteAddr), zap.Error(err))
	}
	return httpError(w, r, wire.BatchStatus(err), err.Error())
}

var jsonType = []string{wire.ContentTypeJSON}
