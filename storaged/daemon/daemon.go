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

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.uber.org/zap"

	"spangle/shared/source"
	"spangle/shared/topo"
	"spangle/storaged/config"
	"spangle/storaged/loader"
	"spangle/storaged/server"
	"spangle/storaged/store"
	"spangle/storaged/versions"
)

// ShutdownTimeout bounds how long in-flight requests get on shutdown.
const ShutdownTimeout = 10 * time.Second

// Daemon is a running storaged.
type Daemon struct {
	// Addr is the address the HTTP server listens on.
	Addr     string
	Versions *versions.Manager
	Server   *server.Server

	log  *zap.Logger
	done chan struct{}
	err  error
}

// Start starts a storaged in the background; cancelling ctx stops it
// (gracefully: in-flight requests finish) and Wait returns once every
// goroutine is done.
func Start(ctx context.Context, cfg config.Config, log *zap.Logger) (*Daemon, error) {
	if cfg.Sharding.Enabled {
		return nil, errors.New("daemon: cluster mode ([sharding] enabled or --zk) is not built yet; run standalone")
	}
	src, err := source.Open(cfg.Source, source.Options{RequireSuccess: cfg.RequireSuccessFile})
	if err != nil {
		return nil, fmt.Errorf("daemon: %w", err)
	}
	st, err := store.Open(cfg.LocalStore)
	if err != nil {
		return nil, fmt.Errorf("daemon: %w", err)
	}
	id, err := st.NodeID()
	if err != nil {
		return nil, fmt.Errorf("daemon: %w", err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	lis, err := net.Listen("tcp", cfg.Bind)
	if err != nil {
		return nil, fmt.Errorf("daemon: %w", err)
	}
	addr := lis.Addr().String()
	advertised := cfg.Sharding.AdvertisedHostname
	if advertised == "" {
		advertised = addr
		if host, port, _ := net.SplitHostPort(addr); host == "::" || host == "0.0.0.0" {
			if h, err := os.Hostname(); err == nil {
				advertised = net.JoinHostPort(h, port)
			}
		}
	}
	shardID := cfg.Sharding.ShardID
	if shardID == "" {
		shardID = advertised
	}
	l := cfg.LevelDB
	mgr, err := versions.New(versions.Options{
		Source: src, Store: st, Log: log, Registerer: reg,
		Retention: cfg.VersionRetention, RefreshPeriod: cfg.RefreshPeriod,
		MaxParallelLoads: cfg.MaxParallelLoads,
		Loader: loader.Options{
			SpillBytes: l.SpillSize,
			Build: store.BuildOptions{BlockSize: l.BlockSize, BloomBitsPerKey: bloomBits(l.BloomBitsPerKey),
				Snappy: l.Compression == "snappy", NoSync: l.NoSync},
		},
		Cache: store.CacheOptions{BlockCacheSize: l.BlockCacheSize, OpenFiles: l.OpenFiles},
	})
	if err != nil {
		lis.Close()
		return nil, fmt.Errorf("daemon: %w", err)
	}
	srv, err := server.New(server.Options{
		Versions: mgr, Log: log, Registry: reg, ContentType: cfg.ContentType,
		MaxInflight: cfg.MaxInflight, Delay: cfg.TestDelay,
		Node: topo.Node{ID: id, ShardID: shardID, Addr: advertised, Started: time.Now().UTC()},
	})
	if err != nil {
		lis.Close()
		return nil, fmt.Errorf("daemon: %w", err)
	}
	d := &Daemon{Addr: addr, Versions: mgr, Server: srv, log: log, done: make(chan struct{})}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		ErrorLog: zap.NewStdLog(log.Named("http"))}

	mctx, mcancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		mgr.Run(mctx)
	}()
	serveErr := make(chan error, 1)
	go func() {
		defer wg.Done()
		if err := hs.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			serveErr <- err
		}
	}()
	log.Info("storaged listening", zap.String("addr", addr), zap.String("source", src.String()),
		zap.String("local_store", st.Root()), zap.String("node_id", id))
	go func() {
		defer close(d.done)
		select {
		case <-ctx.Done():
		case d.err = <-serveErr:
		}
		sctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
		hs.Shutdown(sctx)
		cancel()
		mcancel()
		wg.Wait()
		log.Info("storaged stopped")
	}()
	return d, nil
}

// bloomBits maps the config's "0 = off" to BuildOptions' "negative = off".
func bloomBits(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

// Refresh asks for a re-scan of the source (SIGHUP).
func (d *Daemon) Refresh() { d.Versions.Refresh() }

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
