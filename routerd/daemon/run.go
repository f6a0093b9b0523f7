package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"

	"go.uber.org/zap"

	"spangle/routerd/config"
	"spangle/routerd/health"
	"spangle/routerd/server"
	"spangle/shared/buildinfo"
	"spangle/shared/debugserver"
	"spangle/shared/metrics"
	"spangle/shared/tlsconfig"
	"spangle/shared/topo"
	"spangle/shared/wire"
	xdsserver "spangle/xds/server"
	"spangle/xds/snapshot"
)

// Deps are what Start takes besides the configuration. Zero values are
// the documented defaults.
type Deps struct {
	// Watcher, if set, replaces the discovery cfg asks for (tests feed a
	// topo.Mirror through it).
	Watcher topo.Watcher
	// Logger defaults to a no-op logger.
	Logger *zap.Logger
	// Health tunes the breakers (tests shorten their timeouts).
	Health health.Options
}

// Routerd is a running routerd: discovery, the HTTP server and, with
// xds_bind, the embedded xDS server.
type Routerd struct {
	server *server.Server
	addr   net.Addr
	xds    *xdsserver.Server
	xaddr  net.Addr
	// debugAddr is the debug listener's address; "" when none runs.
	debugAddr string

	wg      sync.WaitGroup
	onError func() // stops everything when one part fails
	mu      sync.Mutex
	errs    []error // guarded by mu
}

// Run serves routerd as cfg says until ctx is cancelled. cfg must have
// passed Validate.
func Run(ctx context.Context, cfg config.Config, log *zap.Logger) error {
	r, err := Start(ctx, cfg, Deps{Logger: log})
	if err != nil {
		return err
	}
	return r.Wait()
}

// Start binds the listeners, starts every goroutine and returns at once.
// Cancelling ctx stops them all; Wait returns when they have stopped.
func Start(ctx context.Context, cfg config.Config, deps Deps) (*Routerd, error) {
	log := deps.Logger
	if log == nil {
		log = zap.NewNop()
	}
	for _, d := range cfg.Deprecated {
		log.Warn("routerd: config key is deprecated; use its new name", zap.String("key", d.Old), zap.String("use", d.New))
	}
	build := buildinfo.Get()
	reg := metrics.NewRegistry()
	if err := reg.Register(metrics.BuildInfo("spangle_routerd_build_info", build)); err != nil {
		return nil, fmt.Errorf("daemon: %w", err)
	}
	r := &Routerd{}
	ctx, cancel := context.WithCancel(ctx)
	r.onError = cancel
	// Until Start succeeds, an error cancels whatever was started.
	ok := false
	defer func() {
		if !ok {
			cancel()
			r.wg.Wait()
		}
	}()

	// A missing, mismatched or expired certificate file stops the start
	// here, named.
	tlsSrc, err := tlsconfig.New(tlsconfig.Options{Settings: cfg.TLS, Log: log.Named("tls"), Registerer: reg})
	if err != nil {
		return nil, fmt.Errorf("daemon: %w", err)
	}
	r.goRun(ctx, "tls", func(ctx context.Context) error { tlsSrc.Run(ctx); return nil })
	w := deps.Watcher
	if w == nil {
		var err error
		w, err = openDiscovery(ctx, cfg, log, reg, tlsSrc, r.goRun)
		if err != nil {
			return nil, err
		}
	}
	s, err := server.New(server.Options{
		Watcher:           w,
		MinReplication:    cfg.Sharding.MinReplication,
		ProxyTimeout:      cfg.ProxyTimeout,
		ProxyStageTimeout: cfg.ProxyStageTimeout,
		HedgeBudget:       hedgeBudget(cfg.HedgeBudget),
		CacheBytes:        cfg.CacheSize,
		ContentType:       cfg.ContentType,
		BatchLimits:       wire.BatchLimits{MaxKeys: cfg.BatchMaxKeys, MaxBytes: cfg.BatchMaxBytes},
		BatchReadTimeout:  cfg.BatchReadTimeout,
		BatchReadBytes:    cfg.BatchReadBytes,
		BatchKeyTimeout:   cfg.BatchKeyTimeout,
		BatchTimeout:      cfg.BatchTimeout,
		Health:            deps.Health,
		Registry:          reg,
		Logger:            log,
		UpstreamTLS:       tlsSrc,
		Build:             build,
	})
	if err != nil {
		return nil, err
	}
	r.server = s
	l, err := net.Listen("tcp", cfg.Bind)
	if err != nil {
		return nil, fmt.Errorf("daemon: listen on %s: %w", cfg.Bind, err)
	}
	r.addr = l.Addr()
	if cfg.TLS.AppTLS {
		l = tlsSrc.Listen(l)
	}
	if cfg.XDSBind != "" {
		xl, err := net.Listen("tcp", cfg.XDSBind)
		if err != nil {
			l.Close()
			return nil, fmt.Errorf("daemon: xds listen on %s: %w", cfg.XDSBind, err)
		}
		r.xaddr = xl.Addr()
		r.xds, err = xdsserver.New(xdsserver.Options{
			Watcher:           w,
			Chooser:           s.Versions(),
			Logger:            log.Named("xds"),
			Listener:          xl,
			RouterdAddr:       r.addr.String(),
			ProxyTimeout:      cfg.ProxyTimeout,
			ProxyStageTimeout: cfg.ProxyStageTimeout,
			TLS:               tlsSrc.ServerConfig(),
			Tuning:            snapshot.Options{UpstreamTLS: upstreamTLS(cfg.TLS), BatchTimeout: cfg.BatchTimeout},
		})
		if err != nil {
			l.Close()
			xl.Close()
			return nil, fmt.Errorf("daemon: %w", err)
		}
		r.goRun(ctx, "xds", r.xds.Run)
	}
	vars := map[string]func() any{"build": func() any { return build }}
	if r.debugAddr, err = debugserver.Start(ctx, cfg.Debug, vars, log.Named("debug")); err != nil {
		l.Close()
		return nil, fmt.Errorf("daemon: %w", err)
	}
	r.goRun(ctx, "http", func(ctx context.Context) error { return s.Serve(ctx, l) })
	log.Info("routerd: serving", zap.Stringer("addr", r.addr), zap.String("version", build.Version), zap.String("commit", build.Commit), zap.Bool("zk", cfg.UseZK()),
		zap.Strings("storaged", cfg.Storaged), zap.Duration("proxy_timeout", cfg.ProxyTimeout),
		zap.Duration("proxy_stage_timeout", cfg.ProxyStageTimeout), zap.Int64("cache_size", cfg.CacheSize),
		zap.Bool("tls_to_storaged", tlsSrc != nil), zap.Bool("app_tls", cfg.TLS.AppTLS))
	ok = true
	// When one part fails, stop the others too.
	go func() {
		r.wg.Wait()
		cancel()
	}()
	return r, nil
}

// upstreamTLS is what Envoy needs to speak mutual TLS to storaged: the
// same files as routerd's own [tls] (Envoy reads and watches them
// itself); nil without TLS.
func upstreamTLS(s tlsconfig.Settings) *snapshot.UpstreamTLS {
	if !s.Enabled() {
		return nil
	}
	return &snapshot.UpstreamTLS{CertFile: s.CertFile, KeyFile: s.KeyFile, CAFile: s.CAFile, PeerNames: s.PeerNames}
}

// hedgeBudget maps the config's 0 (off) to the server's "none".
func hedgeBudget(b float64) float64 {
	if b == 0 {
		return -1
	}
	return b
}

// goRun runs f in a goroutine that Wait waits for; its error is kept.
func (r *Routerd) goRun(ctx context.Context, name string, f func(context.Context) error) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		if err := f(ctx); err != nil && !errors.Is(err, context.Canceled) {
			r.mu.Lock()
			r.errs = append(r.errs, fmt.Errorf("%s: %w", name, err))
			r.mu.Unlock()
			r.onError()
		}
	}()
}

// Addr is the HTTP address routerd listens on.
func (r *Routerd) Addr() net.Addr { return r.addr }

// XDSAddr is the xDS address, or nil without xds_bind.
func (r *Routerd) XDSAddr() net.Addr { return r.xaddr }

// DebugAddr is the debug listener's address ([debug] bind); "" when none runs.
func (r *Routerd) DebugAddr() string { return r.debugAddr }

// Server is the HTTP server, for its status.
func (r *Routerd) Server() *server.Server { return r.server }

// XDS is the embedded xDS server, or nil.
func (r *Routerd) XDS() *xdsserver.Server { return r.xds }

// Wait blocks until every goroutine has stopped and returns their
// errors.
func (r *Routerd) Wait() error {
	r.wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	return errors.Join(r.errs...)
}
