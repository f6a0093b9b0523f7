package daemon

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"spangle/shared/placement"
	"spangle/shared/source"
	"spangle/shared/tlsconfig"
	"spangle/shared/topo"
	"spangle/storaged/config"
	"spangle/storaged/coordinator"
	"spangle/storaged/transfer"
	"spangle/storaged/versions"
)

// newCoordinator makes the node's coordinator when conn offers leader
// election and fenced decisions (ZooKeeper and memtopo do); nil else.
func newCoordinator(cfg config.Config, conn topo.Conn, node topo.Node, src source.Source, peers peerClient, reg prometheus.Registerer, log *zap.Logger) (*coordinator.Coordinator, topo.Coordination, error) {
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
	c, err := coordinator.New(coordinator.Options{
		Conn: conn, Coord: co, Self: node, Strategy: st, Replication: s.Replication,
		RereplicateAfter: offIfZero(s.RereplicateAfter), MinReplication: s.MinReplication,
		PruneAfter: offIfZero(s.PruneAfter), Quorum: q, Source: src, PinPeriod: offIfZero(cfg.RefreshPeriod), Log: log.Named("coordinator"),
		Registerer: reg, Client: peers.http, Scheme: peers.scheme,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("daemon: %w", err)
	}
	return c, co, nil
}

// offIfZero turns the config's 0 (off) into the coordinator's negative
// duration (off; its 0 is the default).
func offIfZero(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// assignedHook is the cluster controller's Assigned hook over the
// coordinator's assignments.
func assignedHook(conn topo.Conn, co topo.Coordination, shard string) func(ctx context.Context, db, version string, n int) ([]int, bool) {
	return func(ctx context.Context, db, version string, n int) ([]int, bool) {
		return coordinator.AssignedTo(ctx, conn, co, shard, db, version, n)
	}
}

// withCoordination routes GET /_elect/... to the coordinator, GET
// /_partition/... to the partition copier, and the rest to next. It
// matches raw prefixes rather than using a ServeMux, which would clean
// (and redirect) key paths holding "//" or "..". With TLS, the two peer
// endpoints answer peers only (tlsconfig's PeerOnly).
func withCoordination(c *coordinator.Coordinator, mgr *versions.Manager, tlsSrc *tlsconfig.Source, next http.Handler) http.Handler {
	if c == nil {
		return next
	}
	copier := tlsSrc.PeerOnly(transfer.Handler(mgr.Views().PartitionDir))
	elect := tlsSrc.PeerOnly(c)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, coordinator.ElectPrefix):
			elect.ServeHTTP(w, r)
		case strings.HasPrefix(r.URL.Path, transfer.Prefix):
			copier.ServeHTTP(w, r)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// newFollower makes the Follower that fetches what the leader assigns
// this node and drops what it takes away.
func newFollower(conn topo.Conn, co topo.Coordination, node topo.Node, mgr *versions.Manager, peers peerClient, log *zap.Logger) (*coordinator.Follower, error) {
	f, err := coordinator.NewFollower(coordinator.FollowerOptions{
		Conn: conn, Coord: co, Self: node,
		Holder: &holder{mgr: mgr, client: peers, log: log.Named("follower")},
		Log:    log.Named("follower"),
	})
	if err != nil {
		return nil, fmt.Errorf("daemon: %w", err)
	}
	return f, nil
}
