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
	s.lookups(v, keys, func(k *wire.BatchKey, val []byte, err error) {
		switch {
		case err == nil:
			// A copy of its own: val is the lookup's buffer.
			a.Found[k.Raw] = append([]byte{}, val...)
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
	})
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
	bs := s.batchScratch()
	defer s.putBatchScratch(bs)
	body := wire.AppendBatchBinaryHead(bs.body[:0], v.Name, len(keys))
	found, missing, failed, notHeld := 0, 0, 0, 0
	s.lookupsIn(bs, v, keys, func(_ *wire.BatchKey, val []byte, err error) {
		switch {
		case err == nil:
			body = wire.AppendBatchFound(body, val)
			found++
			return
		case errors.Is(err, versions.ErrNotFound):
			body = wire.AppendBatchMissing(body)
			missing++
			return
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
	})
	bs.body = body // kept for the next batch once written
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

// prefetchWindow is the keys of a batch readied together
// (versions.Prefetch) before they are looked up: enough for their
// memory loads to overlap, few enough that the lines they bring in are
// still in the CPU's caches when their lookups come.
const prefetchWindow = 128

// maxKeptBatchBody bounds the answer buffer kept for the next batch: a
// 100-key answer of 100-byte values takes 11 KiB.
const maxKeptBatchBody = 256 << 10

// batchScratch is what a batch's lookups reuse from one batch to the
// next (Server.scratch).
type batchScratch struct {
	pf    versions.Prefetch
	keys  []byte   // the window's keys, one after another
	at    [][]byte // each key of the window, a slice of keys
	spots []int    // each key's place in pf, or -1
	val   []byte   // the last value looked up
	body  []byte   // the compact answer
}

func (s *Server) batchScratch() *batchScratch {
	if bs, ok := s.scratch.Get().(*batchScratch); ok {
		return bs
	}
	return &batchScratch{}
}

func (s *Server) putBatchScratch(bs *batchScratch) {
	if cap(bs.body) > maxKeptBatchBody {
		bs.body = nil
	}
	s.scratch.Put(bs)
}

// lookups calls fn with each key's lookup in v, in order (see
// lookupsIn); val is valid only during the call.
func (s *Server) lookups(v *versions.Version, keys []wire.BatchKey, fn func(k *wire.BatchKey, val []byte, err error)) {
	bs := s.batchScratch()
	defer s.putBatchScratch(bs)
	s.lookupsIn(bs, v, keys, fn)
}

// lookupsIn looks each key up in v and calls fn with the result, in
// order, a window of keys at a time: the window is readied first
// (versions.Prefetch) so that its keys' memory loads overlap, then each
// key's value is taken from where the prefetch found it, or, where it
// found none (a missing key, a block not yet checked, a partition not
// held), looked up with Get as a single GET is. val is valid only
// during the call.
func (s *Server) lookupsIn(bs *batchScratch, v *versions.Version, keys []wire.BatchKey, fn func(k *wire.BatchKey, val []byte, err error)) {
	for start := 0; start < len(keys); start += prefetchWindow {
		window := keys[start:min(start+prefetchWindow, len(keys))]
		n := 0
		for i := range window {
			n += len(window[i].Key)
		}
		if cap(bs.keys) < n {
			bs.keys = make([]byte, 0, n)
		}
		// One buffer for the window's keys, filled before any slice of
		// it is taken: it does not move once the slices point into it.
		kb := bs.keys[:0]
		at := bs.at[:0]
		for i := range window {
			from := len(kb)
			kb = append(kb, window[i].Key...)
			at = append(at, kb[from:len(kb):len(kb)])
		}
		bs.keys, bs.at = kb, at
		spots := bs.spots[:0]
		for _, k := range at {
			spots = append(spots, v.AddPrefetch(&bs.pf, k))
		}
		bs.spots = spots
		bs.pf.Run()
		for i, k := range at {
			val, ok := bs.pf.Get(bs.val[:0], spots[i])
			var err error
			if !ok {
				val, err = v.Get(bs.val[:0], k)
			}
			if err == nil {
				bs.val = val
			}
			fn(&window[i], val, err)
		}
		bs.pf.Reset()
		clear(bs.at)
	}
}

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
