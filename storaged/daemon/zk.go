package daemon

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"spangle/shared/topo"
	"spangle/shared/topo/zktopo"
	"spangle/storaged/config"
)

// dialZK starts a ZooKeeper session as cfg.ZK and cfg.Sharding say. It
// returns at once: the session comes up in the background, and until it
// does the cluster controller waits and nothing new is adopted.
func dialZK(cfg config.Config, log *zap.Logger, reg prometheus.Registerer) (topo.Conn, error) {
	conn, err := zktopo.Open(zktopo.Options{
		Servers: cfg.ZK.Servers, Cluster: cfg.Sharding.ClusterName, Prefix: cfg.ZK.Prefix,
		SessionTimeout: cfg.ZK.SessionTimeout, ConnectTimeout: cfg.ZK.ConnectTimeout, Logger: log.Named("zk"),
		Registerer: reg,
	})
	if err != nil {
		return nil, fmt.Errorf("daemon: %w", err)
	}
	return conn, nil
}
