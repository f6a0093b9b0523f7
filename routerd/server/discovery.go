package server

import (
	"context"
	"errors"

	"go.uber.org/zap"

	"spangle/routerd/config"
	"spangle/shared/topo"
)

// openDiscovery returns the Watcher cfg asks for: ZooKeeper (zk/cluster)
// or the static storaged list. Background work it needs runs through
// goRun, so that it stops with ctx and Wait waits for it.
func openDiscovery(ctx context.Context, cfg config.Config, log *zap.Logger,
	goRun func(ctx context.Context, name string, f func(context.Context) error)) (topo.Watcher, error) {
	// TODO(routerd): wire shared/topo/zktopo and shared/topo/statictopo
	// once they land.
	return nil, errors.New("server: discovery backends are not built in yet")
}
