package daemon

import (
	"context"
	"fmt"
	"net/http"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"spangle/routerd/config"
	"spangle/routerd/vetted"
	"spangle/shared/tlsconfig"
	"spangle/shared/topo"
	"spangle/shared/topo/statictopo"
	"spangle/shared/topo/zktopo"
)

// openDiscovery returns the Watcher cfg asks for: ZooKeeper ([zk] and
// [sharding] cluster_name), its nodes vetted by a TLS handshake when TLS
// is on (routerd/vetted), or the static storaged list. Background work
// it needs runs through goRun, so that it stops with ctx and Wait waits
// for it.
func openDiscovery(ctx context.Context, cfg config.Config, log *zap.Logger, reg prometheus.Registerer, tlsSrc *tlsconfig.Source,
	goRun func(ctx context.Context, name string, f func(context.Context) error)) (topo.Watcher, error) {
	if cfg.UseZK() {
		// routerd only reads: a credential matters only where the
		// cluster's acl_read is "auth". Only where it came from and its
		// user are logged.
		cred, source, err := zktopo.LoadCredential(cfg.ZK.AuthFile, os.Getenv)
		if err != nil {
			return nil, fmt.Errorf("daemon: %w", err)
		}
		if !cred.IsZero() {
			log.Info("ZooKeeper credential loaded", zap.String("from", source), zap.String("user", cred.User()))
		}
		w, err := zktopo.OpenWatcher(zktopo.Options{
			Servers:        cfg.ZK.Servers,
			Cluster:        cfg.Sharding.ClusterName,
			Prefix:         cfg.ZK.Prefix,
			SessionTimeout: cfg.ZK.SessionTimeout,
			ConnectTimeout: cfg.ZK.ConnectTimeout,
			Logger:         log.Named("discovery"),
			Registerer:     reg,
			Auth:           cred,
			ReadACL:        cfg.ZK.ACLRead,
		})
		if err != nil {
			return nil, fmt.Errorf("daemon: %w", err)
		}
		// Run closes the session when ctx ends.
		goRun(ctx, "zk discovery", w.Run)
		if tlsSrc == nil {
			return w, nil
		}
		// Anyone with the ZooKeeper credential can register: with TLS on,
		// a node's partitions count only once its certificate is seen.
		vw, err := vetted.New(w, vetted.Options{Check: tlsSrc.Probe, Logger: log.Named("vetted"), Registerer: reg})
		if err != nil {
			return nil, fmt.Errorf("daemon: %w", err)
		}
		goRun(ctx, "node vetting", vw.Run)
		return vw, nil
	}
	so := statictopo.Options{
		URLs:   cfg.Storaged,
		Period: cfg.StoragedPoll,
		Logger: log.Named("discovery"),
	}
	if tlsSrc != nil {
		so.Scheme, so.Client = tlsSrc.Scheme(), &http.Client{Transport: tlsSrc.NewTransport()}
	}
	w, err := statictopo.New(so)
	if err != nil {
		return nil, fmt.Errorf("daemon: %w", err)
	}
	goRun(ctx, "static discovery", w.Run)
	return w, nil
}
