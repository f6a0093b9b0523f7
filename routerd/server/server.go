package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"spangle/routerd/cache"
	"spangle/routerd/health"
	"spangle/routerd/partmap"
	"spangle/routerd/proxy"
	"spangle/shared/buildinfo"
	"spangle/shared/h1fast"
	sharedmetrics "spangle/shared/metrics"
	"spangle/shared/partitioner"
	"spangle/shared/tlsconfig"
	"spangle/shared/topo"
	"spangle/shared/wire"
)

// Options configure a Server. Zero values are the documented defaults;
// Watcher is required.
type Options struct {
	// Watcher is the cluster map to route by.
	Watcher topo.Watcher
	// MinReplication is the replication a version needs to be served
	// (default 1).
	MinReplication int
	// Upstream sends lookups to storaged (default an HTTPUpstream with
	// default options). Tests script replicas through it.
	Upstream proxy.Upstream
	// UpstreamTLS makes the default upstream speak TLS to storaged with
	// these certificates; nil is plaintext.
	UpstreamTLS *tlsconfig.Source
	// ProxyTimeout and ProxyStageTimeout: see proxy.Options (defaults
	// 100ms and ProxyTimeout / 2).
	ProxyTimeout      time.Duration
	ProxyStageTimeout time.Duration
	// HedgeBudget is the fraction of requests that may be hedged over a
	// sliding window (default proxy.DefaultHedgeRatio; negative: none).
	HedgeBudget float64
	// CacheBytes bounds the hot-key cache; 0 turns it off.
	CacheBytes int64
	// ContentType of values when storaged sends none (default
	// wire.DefaultContentType).
	ContentType string
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
	// BatchKeyTimeout is added to ProxyTimeout per key a batch sends
	// upstream (default 0: none); BatchTimeout is the most a batch waits
	// on replicas that keep answering, and bounds that deadline (default
	// ProxyTimeout: never past it). See docs/design.md, batch lookup.
	BatchKeyTimeout time.Duration
	BatchTimeout    time.Duration
	// Health tunes the per-node breakers.
	Health health.Options
	// Registry receives the server's metrics and is what /metrics serves;
	// default a new registry of shared/metrics (never the global one).
	// The daemon makes one and passes it here.
	Registry *prometheus.Registry
	Logger   *zap.Logger
	// Build is the build the status page shows.
	Build buildinfo.Info
}

// Server answers the HTTP API of docs/design.md from storaged replicas.
// It is safe for concurrent use.
type Server struct {
	opts    Options
	log     *zap.Logger
	table   *partmap.Table
	health  *health.Tracker
	proxy   *proxy.Proxy
	cache   *cache.Cache[*answer]
	ctype   []string // the default Content-Type header value
	metrics *metrics
	bm      *batchMetrics
	batchRd wire.BatchRead      // its Budget is the router's
	ownUp   *proxy.HTTPUpstream // the default upstream, closed on shutdown; nil if given
	memo    *headerMemo
	// batchBufs holds *[]byte answer buffers of batches (writeBatch).
	batchBufs sync.Pool
	// batchScratch holds the *batchScratch of batches (serveBatch).
	batchScratch sync.Pool
}

// New builds a Server; it serves nothing until Serve or ServeHTTP.
func New(opts Options) (*Server, error) {
	if opts.Watcher == nil {
		return nil, errors.New("server: no topo watcher")
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.ContentType == "" {
		opts.ContentType = wire.DefaultContentType
	}
	if opts.HedgeBudget == 0 {
		opts.HedgeBudget = proxy.DefaultHedgeRatio
	}
	if opts.Registry == nil {
		opts.Registry = sharedmetrics.NewRegistry()
	}
	m, err := newMetrics(opts.Registry)
	if err != nil {
		return nil, err
	}
	s := &Server{opts: opts, log: opts.Logger, metrics: m, ctype: []string{opts.ContentType}, memo: newHeaderMemo()}
	s.batchRd = wire.BatchRead{Limits: opts.BatchLimits, Timeout: opts.BatchReadTimeout,
		Budget: wire.NewBatchBudget(opts.BatchReadBytes)}
	s.bm = newBatchMetrics(opts.Registry, s.batchRd.Budget)
	if opts.Upstream == nil {
		s.ownUp = proxy.NewHTTPUpstream(proxy.HTTPOptions{TLS: opts.UpstreamTLS, OnDial: m.dialled})
		opts.Upstream = s.ownUp
	}
	s.table = partmap.New(opts.Watcher, partmap.Options{
		MinReplication: opts.MinReplication,
		Logger:         opts.Logger,
		OnSwitch:       func(db, _, _ string) { s.metrics.switches.WithLabelValues(db).Inc() },
	})
	if err := opts.Registry.Register(newPinCollector(s.table)); err != nil {
		return nil, fmt.Errorf("server: registering metrics: %w", err)
	}
	hopts := opts.Health
	hopts.Logger = opts.Logger
	hopts.OnTransition = s.metrics.breakerChanged
	s.health = health.New(hopts)
	s.proxy, err = proxy.New(proxy.Options{
		Upstream:     opts.Upstream,
		Health:       s.health,
		Timeout:      opts.ProxyTimeout,
		StageTimeout: opts.ProxyStageTimeout,
		Budget:       proxy.NewBudget(opts.HedgeBudget, proxy.DefaultHedgeWindow, proxy.DefaultMinHedges),
		OnHedge:      s.metrics.hedges.Inc,
		OnHedgeWon:   s.metrics.hedgesWon.Inc,
		Logger:       opts.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	s.cache = cache.New(cache.Options[*answer]{
		MaxBytes: opts.CacheBytes,
		Size: func(a *answer) int {
			r := a.resp
			return len(r.Body) + len(r.ContentType) + len(r.Addr) + 64
		},
		OnHit:  s.metrics.hits.Inc,
		OnMiss: s.metrics.misses.Inc,
	})
	return s, nil
}

// Versions is the per-db served-version choice, which the embedded xDS
// server uses so Envoy routes to the same versions routerd answers from.
// It implements xds/server.VersionChooser.
func (s *Server) Versions() *partmap.Table { return s.table }

// ServeHTTP routes every request; this is the whole routing table.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		s.servePost(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		httpError(w, http.StatusMethodNotAllowed, "method not allowed")
		return
	}
	switch path := r.URL.EscapedPath(); path {
	case "/":
		s.serveStatus(w, r, "")
	case wire.PathHealth:
		s.serveHealth(w, r)
	case wire.PathMetrics:
		s.metrics.handler.ServeHTTP(w, r)
	case wire.PathFavicon:
		http.NotFound(w, r)
	default:
		start := time.Now()
		t, err := wire.ParsePath(path)
		code := 0
		switch {
		case err != nil:
			var msg string
			code, msg = wire.StatusOf(err)
			httpError(w, code, msg)
		case !t.HasKey:
			s.serveStatus(w, r, t.DB)
			return
		default:
			code = s.lookup(w, r, t)
		}
		s.metrics.observe(code, time.Since(start).Seconds())
	}
}

// choice is the version a request is answered from.
type choice struct {
	st      *partmap.State
	version string
	v       *topo.Version
	pinned  bool // the client pinned version
}

// chooseVersion picks the version a request for db is answered from: the
// one it pins (X-Sequins-Version), else the one partmap serves. When
// there is none to ask it answers the request itself and returns the
// status it wrote; otherwise code is 0. It sets X-Spangle-Pin while a pin
// holds the db. A request that pins no version never gets 410: routerd
// chose the version for it.
// awaited is the version a db without a complete one waits for, which
// routerd will serve first once it is complete: the version a pin holds
// the db at or is about to, else the newest the map holds.
func awaited(st *partmap.State, db string, versions map[string]*topo.Version) string {
	ps := st.PinOf(db)
	if ps.Pending != nil && ps.Pending.Version != "" {
		return ps.Pending.Version
	}
	if ps.Pinned != "" {
		return ps.Pinned
	}
	newest := ""
	for v := range versions {
		if v > newest {
			newest = v
		}
	}
	return newest
}

func (s *Server) chooseVersion(w http.ResponseWriter, r *http.Request, db string) (c choice, code int) {
	c.st = s.table.Current()
	versions := c.st.Map.DBs[db]
	// The header name is canonical, as net/http stores it: index the map
	// without Get's canonicalization.
	if vs := r.Header[wire.HeaderVersion]; len(vs) > 0 {
		c.version = vs[0]
	}
	c.pinned = c.version != ""
	switch {
	case versions == nil:
		return c, httpError(w, http.StatusNotFound, "no such db")
	case c.pinned && versions[c.version] == nil:
		return c, httpError(w, wire.StatusVersionGone, "version not held by any replica")
	case !c.pinned:
		if c.version = c.st.Served(db); c.version == "" {
			// The db exists, so the answer says so (X-Sequins-Version
			// is set iff the db exists), naming the version it waits
			// for.
			w.Header()[wire.HeaderVersion] = []string{awaited(c.st, db, versions)}
			return c, httpError(w, http.StatusNotFound, "db has no complete version yet")
		}
	}
	h := w.Header()
	if p := c.st.Pin(db); p != "" {
		h[wire.HeaderPin] = []string{p}
	}
	if c.v = versions[c.version]; c.v == nil {
		// The served version left the map, and an older one is never
		// served instead.
		h[wire.HeaderVersion] = []string{c.version}
		return c, httpError(w, wire.StatusNoReplica, "no replica of the served version is known")
	}
	return c, 0
}

// lookup answers one key and returns the status it wrote.
func (s *Server) lookup(w http.ResponseWriter, r *http.Request, t wire.Target) int {
	c, code := s.chooseVersion(w, r, t.DB)
	if code != 0 {
		return code
	}
	st, version, v, pinned := c.st, c.version, c.v, c.pinned
	h := w.Header()
	// A hit skips building the fill function and the request. It is
	// answered even while no replica is reachable: a version never
	// changes, so the cached value is still the version's value.
	ck := cache.Key{DB: t.DB, Version: version, Key: t.KeyString}
	a, ok := s.cache.Cached(ck)
	if !ok {
		replicas := registered(st.Map, v.Replicas[partitioner.Partition(t.Key, v.NumPartitions)])
		if len(replicas) == 0 {
			h[wire.HeaderVersion] = []string{version}
			if pinned {
				return httpError(w, wire.StatusVersionGone, "no replica holds the key's partition of this version")
			}
			return httpError(w, wire.StatusNoReplica, "no replica of the key's partition is known")
		}
		var err error
		a, _, err = s.cache.Get(r.Context(), ck, func(ctx context.Context) (*answer, bool, error) {
			resp, err := s.proxy.Do(ctx, &proxy.Request{DB: t.DB, Version: version, Key: t.Key, Replicas: replicas})
			if err != nil {
				return nil, false, err
			}
			return s.newAnswer(version, v, resp), true, nil
		})
		if err != nil {
			return s.proxyError(w, err, version, pinned)
		}
	}
	h[wire.HeaderVersion] = a.version
	h[wire.HeaderProxiedTo] = a.proxiedTo
	if a.resp.Status == http.StatusNotFound {
		return httpError(w, http.StatusNotFound, "no such key")
	}
	if lm := a.lastModifiedFor(v); lm != nil {
		h["Last-Modified"] = lm
	}
	h["Content-Type"] = a.contentType
	h["Content-Length"] = a.contentLength
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(a.resp.Body)
	}
	return http.StatusOK
}

// registered keeps the replicas that are registered nodes: routerd
// contacts no other address, whatever a stale or odd map says.
func registered(m *topo.Map, replicas []string) []string {
	for i, a := range replicas {
		if _, ok := m.Nodes[a]; !ok {
			out := append([]string(nil), replicas[:i]...)
			for _, b := range replicas[i+1:] {
				if _, ok := m.Nodes[b]; ok {
					out = append(out, b)
				}
			}
			return out
		}
	}
	return replicas
}

// proxyError answers a lookup of version that failed with err, as
// proxyStatus says.
func (s *Server) proxyError(w http.ResponseWriter, err error, version string, pinned bool) int {
	h := w.Header()
	if pinned || !errors.Is(err, proxy.ErrNoDB) {
		h[wire.HeaderVersion] = []string{version}
	}
	code, msg, retryAfter := proxyStatus(err, pinned)
	if code == 499 {
		return code // the client left; nobody reads what we write
	}
	if retryAfter != "" {
		h.Set("Retry-After", retryAfter)
	}
	return httpError(w, code, msg)
}

// proxyStatus maps a failed lookup to its status, for a single GET and
// for each key of a batch alike. A 410 is for a client that pinned the
// version; routerd's own choice, when no replica holds it any more, is
// its error (502), or, when every replica says the db is gone, the db's
// absence (404, as for any db that does not exist).
func proxyStatus(err error, pinned bool) (code int, msg, retryAfter string) {
	var shed *proxy.ShedError
	switch {
	case errors.As(err, &shed):
		return wire.StatusUnavailable, "every replica is shedding load", shed.RetryAfter
	case errors.Is(err, proxy.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return wire.StatusTimeout, "all tried replicas timed out", ""
	case pinned && (errors.Is(err, proxy.ErrGone) || errors.Is(err, proxy.ErrNoDB)):
		return wire.StatusVersionGone, "no replica holds this version", ""
	case errors.Is(err, proxy.ErrNoDB):
		return http.StatusNotFound, "no such db", ""
	case errors.Is(err, proxy.ErrGone):
		return wire.StatusNoReplica, "no replica holds the served version", ""
	case errors.Is(err, context.Canceled):
		return 499, "the client left", ""
	default:
		return wire.StatusNoReplica, "no replica reachable", ""
	}
}

func httpError(w http.ResponseWriter, code int, msg string) int {
	h := w.Header()
	h["Content-Type"] = []string{"text/plain; charset=utf-8"}
	h["X-Content-Type-Options"] = []string{"nosniff"}
	body := msg + "\n"
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(code)
	_, _ = w.Write([]byte(body))
	return code
}

// Serve answers on l until ctx is cancelled, then shuts down gracefully
// (in-flight requests get up to ShutdownGrace) and returns. It also
// follows the map to forget the health of nodes that left.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	// Key lookups and batches are answered on h1fast's own connection
	// loop; net/http gets every other request (batches with chunked
	// bodies or Expect too), and TLS connections whole.
	fs, err := h1fast.New(h1fast.Options{
		Lookup:   s.fastLookup,
		Post:     h1fast.PostOptions{Handle: s.fastBatch, MaxBytes: s.batchMaxBytes()},
		Fallback: s,
		Context:  ctx,
		Log:      s.log,
	})
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	followDone := make(chan struct{})
	go func() {
		defer close(followDone)
		s.follow(ctx)
	}()
	errc := make(chan error, 1)
	go func() { errc <- fs.Serve(l) }()
	var serveErr error
	served := false
	select {
	case serveErr = <-errc: // the listener failed
		served = true
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownGrace)
	err = fs.Shutdown(sctx)
	cancel()
	if !served {
		serveErr = <-errc
	}
	if !errors.Is(serveErr, http.ErrServerClosed) {
		err = errors.Join(serveErr, err)
	}
	<-followDone
	if s.ownUp != nil {
		s.ownUp.Close()
	}
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	return nil
}

// fastLookup is a key lookup h1fast took off net/http: what ServeHTTP
// does for one, without parsing the path again.
func (s *Server) fastLookup(w http.ResponseWriter, r *http.Request, t wire.Target) {
	start := time.Now()
	s.metrics.observe(s.lookup(w, r, t), time.Since(start).Seconds())
}

// ShutdownGrace bounds how long Serve waits for in-flight requests.
const ShutdownGrace = 5 * time.Second

// follow keeps the version choice and the node table current as the map
// changes, so switches are logged when they happen rather than on the
// next request, and departed nodes lose their breakers.
func (s *Server) follow(ctx context.Context) {
	var rev uint64
	for {
		m, err := s.opts.Watcher.Wait(ctx, rev)
		if err != nil {
			return
		}
		rev = m.Revision
		s.table.Current()
		s.health.Retain(func(addr string) bool { _, ok := m.Nodes[addr]; return ok })
	}
}
