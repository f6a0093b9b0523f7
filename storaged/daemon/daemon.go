package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"go.uber.org/zap"

	"spangle/shared/buildinfo"
	"spangle/shared/debugserver"
	"spangle/shared/h1fast"
	"spangle/shared/memtrim"
	"spangle/shared/metrics"
	"spangle/shared/placement"
	"spangle/shared/source"
	"spangle/shared/tlsconfig"
	"spangle/shared/topo"
	"spangle/shared/wire"
	"spangle/storaged/blockcache"
	"spangle/storaged/config"
	"spangle/storaged/coordinator"
	"spangle/storaged/loader"
	"spangle/storaged/membership"
	"spangle/storaged/repair"
	"spangle/storaged/server"
	"spangle/storaged/store"
	"spangle/storaged/table"
	"spangle/storaged/versions"
)

// ShutdownTimeout bounds how long in-flight requests get on shutdown.
const ShutdownTimeout = 10 * time.Second

// Daemon is a running storaged.
type Daemon struct {
	// Addr is the address the HTTP server listens on.
	Addr string
	// DebugAddr is the address the debug listener ([debug] bind) listens
	// on; "" when it runs none.
	DebugAddr string
	Versions  *versions.Manager
	Server    *server.Server
	// Cluster is the cluster controller; nil in standalone mode.
	Cluster *membership.Controller

	coord *coordinator.Coordinator // nil in standalone mode
	log   *zap.Logger
	done  chan struct{}
	err   error
}

// Options are what Start takes besides the config. The zero value is
// what main uses.
type Options struct {
	// Conn is the coordination service in cluster mode; the daemon owns it
	// and closes it when it stops. nil dials ZooKeeper as cfg.ZK says.
	Conn topo.Conn
}

// Start starts a storaged in the background; cancelling ctx stops it
// (gracefully: in-flight requests finish) and Wait returns once every
// goroutine is done. Cluster mode (cfg.ClusterMode) dials ZooKeeper.
func Start(ctx context.Context, cfg config.Config, log *zap.Logger) (*Daemon, error) {
	return StartWith(ctx, cfg, log, Options{})
}

// StartWith is Start with a given coordination service (tests).
func StartWith(ctx context.Context, cfg config.Config, log *zap.Logger, o Options) (d *Daemon, err error) {
	conn := o.Conn
	defer func() {
		if err != nil && conn != nil {
			conn.Close()
		}
	}()
	for _, n := range cfg.Notices {
		// Names and reasons only: a value may be a secret.
		log.Warn("config key read otherwise than in sequins", zap.String("key", n.Key), zap.String("use", n.Use), zap.String("why", n.Why))
	}
	build := buildinfo.Get()
	st, err := store.Open(cfg.LocalStore)
	if err != nil {
		return nil, fmt.Errorf("daemon: %w", err)
	}
	id, err := st.NodeID()
	if err != nil {
		return nil, fmt.Errorf("daemon: %w", err)
	}
	reg := metrics.NewRegistry()
	if err := reg.Register(metrics.BuildInfo("spangle_storaged_build_info", build)); err != nil {
		return nil, fmt.Errorf("daemon: %w", err)
	}
	src, err := source.Open(cfg.Source, source.Options{RequireSuccess: cfg.RequireSuccessFile, Registerer: reg,
		S3: source.S3Options{Endpoint: cfg.S3.Endpoint, PathStyle: cfg.S3.PathStyle, Region: cfg.S3.Region}})
	if err != nil {
		return nil, fmt.Errorf("daemon: %w", err)
	}

	// A missing, mismatched or expired certificate file stops the start
	// here, named.
	tlsSrc, err := tlsconfig.New(tlsconfig.Options{Settings: cfg.TLS, Log: log.Named("tls"), Registerer: reg})
	if err != nil {
		return nil, fmt.Errorf("daemon: %w", err)
	}
	peers := peerClient{http: &http.Client{Transport: tlsSrc.NewTransport()}, scheme: tlsSrc.Scheme()}

	lis, err := net.Listen("tcp", cfg.Bind)
	if err != nil {
		return nil, fmt.Errorf("daemon: %w", err)
	}
	defer func() {
		if err != nil {
			lis.Close()
		}
	}()
	addr := lis.Addr().String()
	lis = tlsSrc.Listen(lis) // TLS, TLS and plaintext (accept_plaintext), or as is

	advertised := advertisedAddr(cfg.Sharding.AdvertisedHostname, addr)
	shardID := cfg.Sharding.ShardID
	if shardID == "" {
		shardID = advertised
	}
	node := topo.Node{ID: id, ShardID: shardID, Addr: advertised, Started: time.Now().UTC()}
	mode := "standalone"
	var (
		ctl   *membership.Controller
		coord *coordinator.Coordinator
		co    topo.Coordination
	)
	if cfg.ClusterMode() {
		mode = "cluster"
		if conn == nil {
			if conn, err = dialZK(cfg, log, reg); err != nil {
				return nil, err
			}
		}
		s := cfg.Sharding
		if coord, co, err = newCoordinator(cfg, conn, node, src, peers, reg, log); err != nil {
			return nil, err
		}
		copts := membership.Options{
			Conn: conn, Node: node, Replication: s.Replication, MinReplication: s.MinReplication,
			MaxReplication: s.MaxReplication, TimeToConverge: s.TimeToConverge, Log: log.Named("cluster"),
		}
		if co != nil {
			copts.Assigned = assignedHook(conn, co, node.ShardID)
			copts.Coord = co
		}
		if copts.Strategy, err = placement.ByName(s.Assignment); err != nil {
			return nil, fmt.Errorf("daemon: %w", err)
		}
		ctl, err = membership.New(copts)
		if err != nil {
			return nil, fmt.Errorf("daemon: %w", err)
		}
	}
	l := cfg.LevelDB
	blocks := blockcache.New(int64(l.BlockCacheSize))
	if err := registerBlockCache(reg, blocks); err != nil {
		return nil, err
	}
	// After the start and after each load: the heap's free pages and the
	// binary's pages that serving does not use leave the RSS (memtrim).
	trim := memtrim.New(memtrim.Options{Log: log.Named("memtrim")})
	vopts := versions.Options{
		Source: src, Store: st, Log: log, Registerer: reg,
		Retention: cfg.VersionRetention, RefreshPeriod: cfg.RefreshPeriod, SettleTime: cfg.SettleTime,
		// Long enough for the nodes of a start or a rollout to finish the
		// same version, so that a fallback is loaded only when the newest
		// stays incomplete.
		FallbackAfter:    2 * cfg.Sharding.TimeToConverge,
		MaxParallelLoads: cfg.MaxParallelLoads,
		Loader: loader.Options{
			SpillBytes: l.SpillSize,
			Build: table.BuildOptions{BlockSize: l.BlockSize, BloomBitsPerKey: bloomBits(l),
				Snappy: l.Compression == "snappy", NoSync: l.NoSync},
		},
		Cache:     table.CacheOptions{Blocks: blocks},
		Repair:    repair.Options{ScrubRate: cfg.ScrubRate * 1e6},
		AfterLoad: trim.Request,
	}
	sopts := server.Options{
		Log: log, Registry: reg, ContentType: cfg.ContentType,
		MaxInflight: cfg.MaxInflight, Delay: cfg.TestDelay, Node: node, Mode: mode, Build: build,
		BatchLimits:      wire.BatchLimits{MaxKeys: cfg.BatchMaxKeys, MaxBytes: cfg.BatchMaxBytes},
		BatchReadTimeout: cfg.BatchReadTimeout, BatchReadBytes: cfg.BatchReadBytes,
	}
	if ctl != nil {
		vopts.Hooks = ctl.Hooks()
		sopts.Cluster = ctl.Map
		if coord == nil {
			// Nobody publishes pins: each node follows its own reading
			// of the marker.
			vopts.Hooks.Pin = nil
		}
	}
	if coord != nil {
		sopts.Coordination = coord.WireStatus
		// Peers serve partition copies when they run a coordinator.
		vopts.Hooks.CopyPartition = peerCopier(conn, node.Addr, peers, log.Named("repair"))
	}
	mgr, err := versions.New(vopts)
	if err != nil {
		return nil, fmt.Errorf("daemon: %w", err)
	}
	sopts.Versions, sopts.Views = mgr, mgr.Views()
	sopts.Source = mgr.Views().SourceStatus
	srv, err := server.New(sopts)
	if err != nil {
		return nil, fmt.Errorf("daemon: %w", err)
	}
	d = &Daemon{Addr: addr, Versions: mgr, Server: srv, Cluster: ctl, coord: coord, log: log, done: make(chan struct{})}
	var follower *coordinator.Follower
	if coord != nil {
		if follower, err = newFollower(conn, co, node, mgr, peers, log); err != nil {
			return nil, err
		}
	}
	// Key lookups and batches are served on h1fast's connection loop,
	// over TLS too; everything else (status pages, peer endpoints,
	// batches with chunked bodies) on net/http, as before.
	hs, err := h1fast.New(h1fast.Options{
		Lookup:            srv.ServeKey,
		Post:              h1fast.PostOptions{Handle: srv.ServeBatch, MaxBytes: srv.BatchMaxBytes()},
		Fallback:          withCoordination(coord, mgr, tlsSrc, srv),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		TLS:               true,
		Log:               log,
	})
	if err != nil {
		return nil, fmt.Errorf("daemon: %w", err)
	}

	mctx, mcancel := context.WithCancel(context.Background())
	vars := map[string]func() any{"build": func() any { return build }, "health": func() any { return mgr.Views().Health() }}
	if d.DebugAddr, err = debugserver.Start(mctx, cfg.Debug, vars, log.Named("debug")); err != nil {
		mcancel()
		return nil, fmt.Errorf("daemon: %w", err)
	}
	var wg sync.WaitGroup
	fatal := make(chan error, 2)
	wg.Add(2)
	go func() {
		defer wg.Done()
		mgr.Run(mctx)
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		tlsSrc.Run(mctx) // rotation: re-reads the certificate files
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		trim.Run(mctx)
	}()
	go func() {
		defer wg.Done()
		if err := hs.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fatal <- err
		}
	}()
	if ctl != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			host := clusterHost{Manager: mgr, gain: &holder{mgr: mgr, client: peers, log: log.Named("cluster")}}
			if err := ctl.Run(mctx, host); err != nil {
				fatal <- err
			}
		}()
	}
	if coord != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			coord.Run(mctx)
		}()
		wg.Add(1)
		go func() {
			defer wg.Done()
			follower.Run(mctx)
		}()
	}
	log.Info("storaged listening", zap.String("addr", addr), zap.String("version", build.Version), zap.String("commit", build.Commit), zap.String("mode", mode), zap.String("advertised", advertised),
		zap.String("shard_id", shardID), zap.String("source", src.String()),
		zap.String("local_store", st.Root()), zap.String("node_id", id), zap.Bool("tls", tlsSrc != nil))
	go func() {
		defer close(d.done)
		select {
		case <-ctx.Done():
		case d.err = <-fatal:
		}
		sctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
		hs.Shutdown(sctx)
		cancel()
		mcancel()
		wg.Wait()
		if conn != nil {
			if err := conn.Close(); err != nil {
				log.Warn("closing the coordination service connection", zap.Error(err))
			}
		}
		log.Info("storaged stopped")
	}()
	return d, nil
}

// advertisedAddr is what peers dial: the configured host:port, a
// configured host with the listening port, or the listening address with
// the hostname for a wildcard host.
func advertisedAddr(configured, listening string) string {
	host, port, _ := net.SplitHostPort(listening)
	if configured != "" {
		if _, _, err := net.SplitHostPort(configured); err == nil {
			return configured
		}
		return net.JoinHostPort(configured, port)
	}
	if host == "::" || host == "0.0.0.0" || host == "" {
		if h, err := os.Hostname(); err == nil {
			return net.JoinHostPort(h, port)
		}
	}
	return listening
}

// bloomBits is the bloom filter size the node's tables are written with,
// in BuildOptions' terms (negative: none). The config's 0 turns filters
// off, and so does a node whose lookups would never read them: with no
// block cache, a table of plain blocks is mapped and a lookup searches
// its block in place, so opening it checks its filter and drops it
// (docs/design.md, "Lookups read tables in place"); building the filter
// was 6-8% of the CPU a start on 1M keys took to ACTIVE.
func bloomBits(l config.LevelDB) int {
	if l.BloomBitsPerKey == 0 || (l.BlockCacheSize == 0 && l.Compression != "snappy") {
		return -1
	}
	return l.BloomBitsPerKey
}

// Refresh asks for a re-scan of the source (SIGHUP).
func (d *Daemon) Refresh() {
	d.Versions.Refresh()
	if d.coord != nil {
		d.coord.RefreshPins() // if this node leads, it reads the _PIN markers now
	}
}

// Wait blocks until the daemon has stopped and returns why, if not
// because its context ended.
func (d *Daemon) Wait() error {
	<-d.done
	return d.err
}

// Run starts a storaged and blocks until ctx ends; each receive on
// refresh re-scans the source.
func Run(ctx context.Context, cfg config.Config, log *zap.Logger, refresh <-chan struct{}) error {
	d, err := Start(ctx, cfg, log)
	if err != nil {
		return err
	}
	for {
		select {
		case <-refresh:
			log.Info("re-scanning the source")
			d.Refresh()
		case <-d.done:
			return d.Wait()
		}
	}
}
