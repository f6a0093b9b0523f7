package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/log"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"

	"spangle/shared/topo"
	"spangle/xds/snapshot"
)

// Defaults of Options.
const (
	DefaultResolveInterval = 30 * time.Second
	// resolveBudget bounds the lookups of never-seen host names made
	// before a push, so that a slow DNS cannot hold back the push much.
	resolveBudget = 300 * time.Millisecond
)

// nodeKey is the one cache entry every Envoy reads.
const nodeKey = "spangle"

// Options configure a Server. Zero values mean the documented defaults;
// Watcher, RouterdAddr and one of Listener and Bind are required.
type Options struct {
	// Watcher is the partition map to follow.
	Watcher topo.Watcher
	// Chooser gives the version Envoy routes each db to. Default:
	// NewNewestComplete(1).
	Chooser VersionChooser
	// Logger defaults to a no-op logger.
	Logger *zap.Logger

	// Listener is where gRPC is served; if nil, Run listens on Bind
	// (routerd's --xds-bind). Run closes it when it returns.
	Listener net.Listener
	Bind     string
	// TLS, when not nil, serves gRPC over TLS with this config (routerd
	// passes its [tls] server config: rotation and client
	// certificates as there). nil is plaintext.
	TLS *tls.Config

	// RouterdAddr is routerd's HTTP host:port, which Envoy sends the
	// requests it cannot place to.
	RouterdAddr string
	// ListenerAddress and ListenerPort are where Envoy takes lookups
	// (default 0.0.0.0:10000).
	ListenerAddress string
	ListenerPort    uint32
	// ProxyTimeout and ProxyStageTimeout are routerd's: the whole lookup's
	// bound, and how long one replica gets before Envoy hedges.
	ProxyTimeout      time.Duration
	ProxyStageTimeout time.Duration
	// Tuning holds the other knobs of the generated resources (circuit
	// breakers, outlier detection, names); the fields above override
	// its same-named fields when set.
	Tuning snapshot.Options

	// ResolveInterval is how often storaged host names are looked up
	// again (default DefaultResolveInterval). LookupHost defaults to the
	// system resolver.
	ResolveInterval time.Duration
	LookupHost      func(ctx context.Context, host string) ([]string, error)
}

// Status is what the server last pushed, for status pages and tests.
type Status struct {
	// Version is the snapshot version, which increases with every push.
	Version uint64
	// MapRevision is the revision of the map it was built from.
	MapRevision uint64
	// Pushed is when it was set in the cache, which answers every open
	// Envoy watch at once.
	Pushed time.Time
	// DBs are the dbs Envoy routes to storaged, with their versions.
	DBs []snapshot.Served
}

// Server serves Envoy's aggregated discovery service from the partition
// map. Create it with New and start it with Run.
type Server struct {
	opts  Options
	snap  snapshot.Options
	log   *zap.Logger
	cache cachev3.SnapshotCache
	res   *resolver

	mu         sync.Mutex
	version    uint64              // guarded by mu; of the last snapshot built
	last       *snapshot.Resources // guarded by mu; what was last pushed
	status     Status              // guarded by mu
	pushed     chan struct{}       // guarded by mu; closed and replaced on each push
	lastMap    *topo.Map           // guarded by mu; the map last built from
	lastServed map[string]string   // guarded by mu; the versions chosen for lastMap
}

// New checks opts and returns a Server that does nothing until Run.
func New(opts Options) (*Server, error) {
	if opts.Watcher == nil {
		return nil, errors.New("server: no topo watcher")
	}
	if opts.Listener == nil && opts.Bind == "" {
		return nil, errors.New("server: neither listener nor bind address")
	}
	if opts.Chooser == nil {
		opts.Chooser = NewNewestComplete(1)
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.ResolveInterval <= 0 {
		opts.ResolveInterval = DefaultResolveInterval
	}
	snap := opts.Tuning
	if opts.RouterdAddr != "" {
		snap.RouterdAddr = opts.RouterdAddr
	}
	if opts.ListenerAddress != "" {
		snap.ListenerAddress = opts.ListenerAddress
	}
	if opts.ListenerPort != 0 {
		snap.ListenerPort = opts.ListenerPort
	}
	if opts.ProxyTimeout > 0 {
		snap.ProxyTimeout = opts.ProxyTimeout
	}
	if opts.ProxyStageTimeout > 0 {
		snap.ProxyStageTimeout = opts.ProxyStageTimeout
	}
	// Fail now on options no map can fix, such as a bad routerd address.
	if _, err := snapshot.Build(snapshot.Input{Map: topo.EmptyMap()}, snap); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	log := opts.Logger.Named("xds")
	s := &Server{
		opts:   opts,
		snap:   snap,
		log:    log,
		res:    newResolver(opts.LookupHost, log),
		pushed: make(chan struct{}),
	}
	s.cache = cachev3.NewSnapshotCache(true, anyNode{}, cacheLogger(log))
	return s, nil
}

// anyNode gives every Envoy the one snapshot.
type anyNode struct{}

func (anyNode) ID(*corev3.Node) string { return nodeKey }

// cacheLogger sends go-control-plane's chatty logs to zap at debug level,
// its warnings and errors at theirs.
func cacheLogger(l *zap.Logger) log.Logger {
	s := l.Sugar()
	return log.LoggerFuncs{DebugFunc: s.Debugf, InfoFunc: s.Debugf, WarnFunc: s.Warnf, ErrorFunc: s.Errorf}
}

// Status returns what was last pushed.
func (s *Server) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status
}

// Run serves gRPC and follows the map until ctx is cancelled, then stops
// the gRPC server (closing every Envoy stream) and returns nil. It
// returns an error if it cannot listen or serve.
func (s *Server) Run(ctx context.Context) error {
	lis := s.opts.Listener
	if lis == nil {
		var err error
		lis, err = net.Listen("tcp", s.opts.Bind)
		if err != nil {
			return fmt.Errorf("server: listen: %w", err)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	gopts := []grpc.ServerOption{
		// Envoy pings idle ADS streams; let it.
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true}),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: 30 * time.Second, Timeout: 10 * time.Second}),
	}
	if s.opts.TLS != nil {
		gopts = append(gopts, grpc.Creds(credentials.NewTLS(s.opts.TLS)))
	}
	gs := grpc.NewServer(gopts...)
	xs := serverv3.NewServer(ctx, s.cache, s.callbacks())
	discoveryv3.RegisterAggregatedDiscoveryServiceServer(gs, xs)

	var wg sync.WaitGroup
	serveErr := make(chan error, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		serveErr <- gs.Serve(lis)
	}()
	maps := make(chan *topo.Map, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.follow(ctx, maps)
	}()
	s.log.Info("xds: serving ADS", zap.Stringer("addr", lis.Addr()), zap.Bool("tls", s.opts.TLS != nil))

	refreshed := make(chan struct{}, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.refreshHosts(ctx, refreshed)
	}()
	var err error
loop:
	for {
		select {
		case m := <-maps:
			s.rebuild(ctx, m)
		case <-refreshed:
			s.mu.Lock()
			m := s.lastMap
			s.mu.Unlock()
			if m != nil {
				s.rebuild(ctx, m)
			}
		case err = <-serveErr:
			err = fmt.Errorf("server: serve: %w", err)
			break loop
		case <-ctx.Done():
			break loop
		}
	}
	cancel()
	gs.Stop()
	wg.Wait()
	s.log.Info("xds: stopped")
	return err
}

// follow sends every new map to maps, dropping one not yet taken in
// favour of the newer one: only the latest map matters.
func (s *Server) follow(ctx context.Context, maps chan *topo.Map) {
	m := s.opts.Watcher.Map()
	for {
		select {
		case <-maps:
		default:
		}
		maps <- m // never blocks: the only other sender is this loop
		next, err := s.opts.Watcher.Wait(ctx, m.Revision)
		if err != nil {
			return
		}
		m = next
	}
}

// refreshHosts looks the storaged host names of the last map up again
// every ResolveInterval, away from the push path so that a slow DNS never
// delays a push, and signals refreshed for a rebuild with the answers.
func (s *Server) refreshHosts(ctx context.Context, refreshed chan<- struct{}) {
	tick := time.NewTicker(s.opts.ResolveInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		s.mu.Lock()
		m, served := s.lastMap, s.lastServed
		s.mu.Unlock()
		hs := hosts(m, served)
		if len(hs) == 0 {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, s.opts.ResolveInterval/2)
		s.res.resolve(rctx, hs, true)
		cancel()
		select {
		case refreshed <- struct{}{}:
		default:
		}
	}
}

// rebuild builds the resources for m and pushes them if they changed.
// An invalid or inconsistent snapshot is logged and never pushed: Envoy
// keeps the last good one.
func (s *Server) rebuild(ctx context.Context, m *topo.Map) {
	served := s.opts.Chooser.Served(m)
	rctx, cancel := context.WithTimeout(ctx, resolveBudget)
	resolved := s.res.resolve(rctx, hosts(m, served), false)
	cancel()

	res, err := snapshot.Build(snapshot.Input{Map: m, Served: served, Resolved: resolved}, s.snap)
	if err != nil {
		s.log.Error("xds: cannot build snapshot", zap.Uint64("map_revision", m.Revision), zap.Error(err))
		return
	}
	s.mu.Lock()
	s.lastMap, s.lastServed = m, served
	if res.Equal(s.last) {
		s.status.MapRevision = m.Revision
		s.mu.Unlock()
		return
	}
	s.version++
	version := s.version
	s.mu.Unlock()

	if len(res.Missing) > 0 || len(res.Unresolved) > 0 {
		s.log.Warn("xds: some data cannot be routed by Envoy; routerd answers for it",
			zap.Strings("dbs_missing_served_version", res.Missing),
			zap.Strings("unresolved_replicas", res.Unresolved))
	}
	snap, err := res.Snapshot(strconv.FormatUint(version, 10))
	if err != nil {
		s.log.Error("xds: refusing invalid snapshot", zap.Uint64("version", version), zap.Error(err))
		return
	}
	if err := s.cache.SetSnapshot(ctx, nodeKey, snap); err != nil {
		s.log.Error("xds: cannot set snapshot", zap.Uint64("version", version), zap.Error(err))
		return
	}
	now := time.Now()
	s.mu.Lock()
	s.last = res
	s.status = Status{Version: version, MapRevision: m.Revision, Pushed: now, DBs: res.DBs}
	close(s.pushed)
	s.pushed = make(chan struct{})
	s.mu.Unlock()
	s.log.Debug("xds: pushed snapshot", zap.Uint64("version", version),
		zap.Uint64("map_revision", m.Revision), zap.Int("clusters", len(res.Clusters)))
}

// WaitPush blocks until a snapshot newer than version has been pushed,
// and returns its status, or ctx's error.
func (s *Server) WaitPush(ctx context.Context, version uint64) (Status, error) {
	for {
		s.mu.Lock()
		st, ch := s.status, s.pushed
		s.mu.Unlock()
		if st.Version > version {
			return st, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return Status{}, ctx.Err()
		}
	}
}

// callbacks log streams, and each NACK: an Envoy refusing a snapshot is
// a bug here, and it keeps its last good configuration meanwhile.
func (s *Server) callbacks() serverv3.CallbackFuncs {
	nack := func(node *corev3.Node, typeURL string, detail interface{ GetMessage() string }) {
		s.log.Warn("xds: Envoy rejected a configuration", zap.String("node", node.GetId()),
			zap.String("type", typeURL), zap.String("error", detail.GetMessage()))
	}
	return serverv3.CallbackFuncs{
		StreamOpenFunc: func(_ context.Context, id int64, typeURL string) error {
			s.log.Debug("xds: stream opened", zap.Int64("stream", id), zap.String("type", typeURL))
			return nil
		},
		StreamClosedFunc: func(id int64, node *corev3.Node) {
			s.log.Debug("xds: stream closed", zap.Int64("stream", id), zap.String("node", node.GetId()))
		},
		DeltaStreamOpenFunc: func(_ context.Context, id int64, typeURL string) error {
			s.log.Debug("xds: delta stream opened", zap.Int64("stream", id), zap.String("type", typeURL))
			return nil
		},
		DeltaStreamClosedFunc: func(id int64, node *corev3.Node) {
			s.log.Debug("xds: delta stream closed", zap.Int64("stream", id), zap.String("node", node.GetId()))
		},
		StreamRequestFunc: func(_ int64, req *discoveryv3.DiscoveryRequest) error {
			if req.GetErrorDetail() != nil {
				nack(req.GetNode(), req.GetTypeUrl(), req.GetErrorDetail())
			}
			return nil
		},
		StreamDeltaRequestFunc: func(_ int64, req *discoveryv3.DeltaDiscoveryRequest) error {
			if req.GetErrorDetail() != nil {
				nack(req.GetNode(), req.GetTypeUrl(), req.GetErrorDetail())
			}
			return nil
		},
	}
}
