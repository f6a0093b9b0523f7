package daemon

import (
	"errors"

	"go.uber.org/zap"

	"spangle/shared/topo"
	"spangle/storaged/config"
)

// dialZK connects to ZooKeeper as cfg.ZK says.
func dialZK(cfg config.Config, log *zap.Logger) (topo.Conn, error) {
	return nil, errors.New("daemon: ZooKeeper backend not wired yet")
}
