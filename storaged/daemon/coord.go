package daemon

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"go.uber.org/zap"

	"spangle/shared/placement"
	"spangle/shared/topo"
	"spangle/storaged/config"
	"spangle/storaged/coordinator"
)

// newCoordinator makes the node's coordinator when conn offers leader
// election and fenced decisions (ZooKeeper and memtopo do); nil else.
func newCoordinator(cfg config.Config, conn topo.Conn, node topo.Node, log *zap.Logger) (*coordinator.Coordinator, topo.Coordination, error) {
	co, ok := conn.(topo.Coordination)
	if !ok {
		log.Info("the coordination service offers no leader election; no re-replication")
		return nil, nil, nil
	}
	s := cfg.Sharding
	st, err := placement.ByName(s.Assignment)
	if err != nil {
		return nil, nil, fmt.Errorf("daemon: %w", err)
	}
	q, err := coordinator.ParseQuorum(s.ElectQuorum)
	if err != nil {
		return nil, nil, fmt.Errorf("daemon: %w", err)
	}
	after := s.RereplicateAfter
	if after == 0 {
		after = -1 // the config's 0 is off
	}
	c, err := coordinator.New(coordinator.Options{
		Conn: conn, Coord: co, Self: node, Strategy: st, Replication: s.Replication,
		RereplicateAfter: after, Quorum: q, Log: log.Named("coordinator"),
	})
	if err != nil {
		return nil, nil, fmt.Errorf("daemon: %w", err)
	}
	return c, co, nil
}

// assignedHook is the cluster controller's Assigned hook over the
// coordinator's assignments.
func assignedHook(conn topo.Conn, co topo.Coordination, shard string) func(ctx context.Context, db, version string, n int) ([]int, bool) {
	return func(ctx context.Context, db, version string, n int) ([]int, bool) {
		return coordinator.AssignedTo(ctx, conn, co, shard, db, version, n)
	}
}

// withElect routes GET /_elect/... to the coordinator and the rest to
// next. It matches the raw prefix rather than using a ServeMux, which
// would clean (and redirect) key paths holding "//" or "..".
func withElect(c *coordinator.Coordinator, next http.Handler) http.Handler {
	if c == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, coordinator.ElectPrefix) {
			c.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}
