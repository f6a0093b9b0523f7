package server

import (
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"spangle/shared/buildinfo"
	sharedmetrics "spangle/shared/metrics"
	"spangle/shared/topo"
	"spangle/shared/wait"
	"spangle/shared/wire"
	"spangle/storaged/versions"
)

// Versions is what the server needs of the version manager.
type Versions interface {
	Acquire(db, pinned string) (*versions.Version, error)
	CurrentVersion(db string) string
	// Ready reports whether the versions the local store held complete
	// at the start answer; until then a lookup that finds no version
	// answers 503 with Retry-After, not 404 or 410.
	Ready() bool
}

// Views is what the status page and /healthz read of the version
// manager (versions.Views).
type Views interface {
	Health() map[string]map[string]wire.Health
	Status(db string) map[string]wire.DBStatus
}

// Options configures a Server. Zero values select the defaults noted.
type Options struct {
	Versions Versions
	Views    Views
	// Log defaults to no logging.
	Log *zap.Logger
	// Registry receives the server's metrics and is what /metrics serves;
	// default a new registry of shared/metrics (never the global one).
	// The daemon makes one and passes it here.
	Registry *prometheus.Registry
	// ContentType of values; default wire.DefaultContentType.
	ContentType string
	// MaxInflight sheds load: a lookup arriving while this many are in
	// progress gets 503 with Retry-After at once. 0 means no limit.
	MaxInflight int
	// RetryAfter is the Retry-After of a shed request; default 1s.
	RetryAfter time.Duration
	// BatchLimits bound a batch lookup (POST /<db>); zero values are
	// wire's defaults.
	BatchLimits wire.BatchLimits
	// BatchReadTimeout bounds how long a batch body may take to arrive
	// (408 after it); default wire.DefaultBatchReadTimeout.
	BatchReadTimeout time.Duration
	// BatchReadBytes bounds the bytes of batch bodies held at once
	// (503 with Retry-After beyond it); default
	// wire.DefaultBatchReadBytes.
	BatchReadBytes int64
	// Delay holds every key lookup this long before answering: for tests
	// and benchmarks of routers (slow replicas). Off by default.
	Delay time.Duration
	// Node describes this node on the status page.
	Node topo.Node
	// Mode is "standalone" (default) or "cluster".
	Mode string
	// Build is the build the status page shows.
	Build buildinfo.Info
	// Cluster returns the cached cluster map the status page shows (cluster
	// mode); it must not block on the network. nil shows none.
	Cluster func() *topo.Map
	// Coordination returns what the status page shows of the leader and
	// its assignments (cluster mode); it must not block on the network.
	// nil shows none.
	Coordination func() *wire.CoordinationStatus
	// Source returns the outcome of the last listing of the source root,
	// shown on the status page and, when it failed, on /healthz. nil
	// shows none.
	Source func() wire.SourceStatus
}

// Server is the HTTP handler. It is safe for concurrent use.
type Server struct {
	opts        Options
	log         *zap.Logger
	contentType []string
	retryAfter  []string
	lengths     [][]string // Content-Length values of short bodies, by length
	inflight    atomic.Int64
	batchRead   wire.BatchRead // its Budget is the node's
	batchSlots  chan struct{}  // batches looking keys up at once (batch.go)
	values      sync.Pool      // *[]byte for values, see valueBuffer
	scratch     sync.Pool      // *batchScratch of batches (batch.go)
	metrics     *metrics
	batch       *batchMetrics
	metricsH    http.Handler
}

// New returns a Server.
func New(opts Options) (*Server, error) {
	if opts.Versions == nil || opts.Views == nil {
		return nil, errors.New("server: Versions and Views are required")
	}
	if opts.Log == nil {
		opts.Log = zap.NewNop()
	}
	if opts.Registry == nil {
		opts.Registry = sharedmetrics.NewRegistry()
	}
	if opts.ContentType == "" {
		opts.ContentType = wire.DefaultContentType
	}
	if opts.RetryAfter <= 0 {
		opts.RetryAfter = time.Second
	}
	if opts.Mode == "" {
		opts.Mode = "standalone"
	}
	secs := int((opts.RetryAfter + time.Second - 1) / time.Second)
	s := &Server{
		opts: opts, log: opts.Log, batchSlots: newBatchSlots(),
		contentType: []string{opts.ContentType},
		retryAfter:  []string{strconv.Itoa(secs)},
	}
	s.batchRead = wire.BatchRead{Limits: opts.BatchLimits, Timeout: opts.BatchReadTimeout,
		Budget: wire.NewBatchBudget(opts.BatchReadBytes)}
	s.lengths = make([][]string, prebuiltLengths)
	for n := range s.lengths {
		s.lengths[n] = []string{strconv.Itoa(n)}
	}
	m, err := newMetrics(opts.Registry, &s.inflight)
	if err != nil {
		return nil, err
	}
	s.metrics = m
	if s.batch, err = newBatchMetrics(opts.Registry, s.batchRead.Budget); err != nil {
		return nil, err
	}
	s.metricsH = promhttp.HandlerFor(opts.Registry, promhttp.HandlerOpts{})
	return s, nil
}

var allowGetHead = []string{"GET, HEAD"}

// prebuiltLengths bounds the body lengths whose Content-Length header
// value is built once in New rather than on every request.
const prebuiltLengths = 1024

// contentLength is the Content-Length header value of an n-byte body.
func (s *Server) contentLength(n int) []string {
	if n < len(s.lengths) {
		return s.lengths[n]
	}
	return []string{strconv.Itoa(n)}
}

// ServeHTTP routes a request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := monotonic()
	if r.Method == http.MethodPost {
		s.observe(start, s.servePost(w, r))
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header()["Allow"] = allowGetHead
		s.observe(start, httpError(w, r, http.StatusMethodNotAllowed, "method not allowed"))
		return
	}
	// The special paths are their own escaped form: a URL that keeps a
	// RawPath is none of them.
	path := r.URL.Path
	if r.URL.RawPath != "" {
		path = r.URL.EscapedPath()
	}
	switch path {
	case "/":
		s.observe(start, s.serveStatus(w, r, ""))
		return
	case wire.PathHealth:
		s.observe(start, s.serveHealth(w, r))
		return
	case wire.PathMetrics:
		s.metricsH.ServeHTTP(w, r)
		return
	case wire.PathFavicon:
		http.NotFound(w, r)
		return
	}
	t, err := target(r.URL)
	switch {
	case err != nil:
		code, msg := wire.StatusOf(err)
		s.observe(start, httpError(w, r, code, msg))
	case !t.HasKey:
		s.observe(start, s.serveStatus(w, r, t.DB))
	default:
		s.observe(start, s.serveKey(w, r, t.DB, t.Key))
	}
}

// ServeKey answers a GET or HEAD of a key whose path is already parsed,
// as ServeHTTP answers it: the daemon serves key lookups through it on
// shared/h1fast's connection loop, and everything else through
// ServeHTTP on net/http. It has h1fast.Lookup's signature.
func (s *Server) ServeKey(w http.ResponseWriter, r *http.Request, t wire.Target) {
	start := monotonic()
	s.observe(start, s.serveKey(w, r, t.DB, t.Key))
}

// target is wire.ParsePath of u's escaped path, without escaping Path
// only to unescape it again where that changes nothing: a URL that keeps
// no RawPath was sent as Path escaped, so the first "/" after the db is
// Path's first one, and Path is the unescaped path. Any other path, and
// any path ParsePath refuses, goes through ParsePath.
func target(u *url.URL) (wire.Target, error) {
	if u.RawPath == "" && len(u.Path) > 1 && u.Path[0] == '/' {
		db, key, hasKey := strings.Cut(u.Path[1:], "/")
		if topo.ValidName(db) {
			switch {
			case !hasKey:
				return wire.Target{DB: db}, nil
			case key != "" && len(key) <= wire.MaxKeyLen:
				return wire.Target{DB: db, Key: []byte(key), KeyString: key, HasKey: true}, nil
			}
		}
	}
	return wire.ParsePath(u.EscapedPath())
}

func (s *Server) observe(start time.Duration, code int) {
	s.metrics.observe(code, monotonic()-start)
}

// epoch is the origin of monotonic's readings.
var epoch = time.Now()

// monotonic is the time since epoch, for durations: one read of the
// monotonic clock, where time.Now reads the wall clock too.
func monotonic() time.Duration { return time.Since(epoch) }

// serveKey is where a key lookup is served. It returns the status sent.
func (s *Server) serveKey(w http.ResponseWriter, r *http.Request, db string, key []byte) int {
	defer s.inflight.Add(-1)
	if code := s.admit(w, r); code != 0 {
		return code
	}
	v, code := s.acquire(w, r, db)
	if code != 0 {
		return code
	}
	buf := s.valueBuffer()
	defer s.recycle(buf)
	val, err := v.Get((*buf)[:0], key)
	v.Release()
	*buf = val
	h := w.Header()
	h[wire.HeaderVersion] = v.HeaderVersion
	switch {
	case err == nil:
	case errors.Is(err, versions.ErrNotFound):
		return httpError(w, r, http.StatusNotFound, "key not found")
	case errors.Is(err, versions.ErrPartitionNotHeld):
		return httpError(w, r, wire.StatusNotHeld, "partition not held by this node")
	case errors.Is(err, versions.ErrPartitionCorrupt):
		// Not this node's fault for good, nor the key's: another replica
		// answers it (routerd tries one at once), and so does this node
		// once the partition is rebuilt.
		s.log.Debug("lookup read a corrupt block", zap.String("db", db), zap.String("version", v.Name), zap.Error(err))
		w.Header()["Retry-After"] = s.retryAfter
		return httpError(w, r, wire.StatusUnavailable, "partition corrupt on this node; being rebuilt")
	default:
		s.log.Error("lookup failed", zap.String("db", db), zap.String("version", v.Name), zap.Error(err))
		return httpError(w, r, http.StatusInternalServerError, "lookup failed")
	}
	h["Last-Modified"] = v.HeaderLastModified
	if v.HeaderContentType != nil {
		h["Content-Type"] = v.HeaderContentType
	} else {
		h["Content-Type"] = s.contentType
	}
	if r.Method == http.MethodHead || len(val) > autoLengthMax {
		h["Content-Length"] = s.contentLength(len(val))
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodHead {
			return http.StatusOK
		}
	}
	// A short value stays in net/http's buffer until the handler
	// returns, and net/http then sends its Content-Length itself, by a
	// path cheaper than a header of the map (sorted, copied, parsed).
	w.Write(val)
	return http.StatusOK
}

// autoLengthMax is the longest value whose Content-Length net/http
// writes itself: a body that fits the 2 KiB buffer of its response
// writer when the handler returns (longer ones would go chunked).
const autoLengthMax = 2048 - 1

// admit is the first step of every lookup, a GET's and a batch's: it
// takes an in-flight slot, which the caller gives back whatever the
// outcome (defer s.inflight.Add(-1), before calling admit), and answers
// 503 itself when the node is over Options.MaxInflight, returning the
// status it wrote; 0 admits the lookup.
func (s *Server) admit(w http.ResponseWriter, r *http.Request) int {
	n := s.inflight.Add(1)
	if s.opts.MaxInflight > 0 && n > int64(s.opts.MaxInflight) {
		w.Header()["Retry-After"] = s.retryAfter
		return httpError(w, r, wire.StatusUnavailable, "overloaded")
	}
	return 0
}

// acquire is the second step of every lookup: after Options.Delay (tests
// only), it takes the version a request for db is answered from: the
// one it pins (X-Sequins-Version), else the active one; the caller
// releases it. When there is none it answers the request itself and
// returns the status it wrote; otherwise code is 0.
func (s *Server) acquire(w http.ResponseWriter, r *http.Request, db string) (v *versions.Version, code int) {
	if s.opts.Delay > 0 {
		if err := wait.Sleep(r.Context(), s.opts.Delay); err != nil {
			return nil, httpError(w, r, wire.StatusUnavailable, "cancelled")
		}
	}
	var pinned string
	if vs := r.Header[wire.HeaderVersion]; len(vs) > 0 {
		pinned = vs[0]
	}
	v, err := s.opts.Versions.Acquire(db, pinned)
	ready := true
	if err != nil {
		// A node that turned ready after the lookup failed (the version
		// opened in between) is asked once more: its answer is then the
		// truth, and a 404 never answers for a db it was opening.
		if ready = s.opts.Versions.Ready(); ready {
			v, err = s.opts.Versions.Acquire(db, pinned)
		}
	}
	switch {
	case err == nil:
		return v, 0
	case !ready:
		// Restarting: what the local store holds is still being
		// opened, and a 404 would tell readers the db does not exist.
		w.Header()["Retry-After"] = s.retryAfter
		return nil, httpError(w, r, wire.StatusUnavailable, "starting: local versions still opening")
	case errors.Is(err, versions.ErrVersionNotHeld):
		// The header tells a router whether this node knows the db at
		// all: without it, the db is gone here.
		if cur := s.opts.Versions.CurrentVersion(db); cur != "" {
			w.Header()[wire.HeaderVersion] = []string{cur}
		}
		return nil, httpError(w, r, wire.StatusVersionGone, "version not held")
	default:
		return nil, httpError(w, r, http.StatusNotFound, "no such db")
	}
}

// maxPooledValue bounds the buffers kept for values: a rare huge value
// is not held on to.
const maxPooledValue = 64 << 10

// valueBuffer returns a buffer for a value: lookups copy the value out of
// the block cache, whose blocks are reused once evicted.
func (s *Server) valueBuffer() *[]byte {
	if b, _ := s.values.Get().(*[]byte); b != nil {
		return b
	}
	b := make([]byte, 0, 1024)
	return &b
}

func (s *Server) recycle(b *[]byte) {
	if cap(*b) <= maxPooledValue {
		s.values.Put(b)
	}
}

var textPlain = []string{"text/plain; charset=utf-8"}
var nosniff = []string{"nosniff"}

// httpError writes a short text error and returns code.
func httpError(w http.ResponseWriter, r *http.Request, code int, msg string) int {
	h := w.Header()
	h["Content-Type"] = textPlain
	h["X-Content-Type-Options"] = nosniff
	h["Content-Length"] = []string{strconv.Itoa(len(msg) + 1)}
	w.WriteHeader(code)
	if r.Method != http.MethodHead {
		io.WriteString(w, msg+"\n")
	}
	return code
}
