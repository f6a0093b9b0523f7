package daemon

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"

	"go.uber.org/zap"

	"spangle/shared/dbver"
	"spangle/shared/topo"
	"spangle/storaged/coordinator"
	"spangle/storaged/replica"
	"spangle/storaged/transfer"
	"spangle/storaged/versions"
)

// holder is the coordinator Follower's view of the version manager: a
// partition the leader assigns here is copied from a live peer, or built
// from the source when no peer can give it.
type holder struct {
	mgr    *versions.Manager
	client peerClient
	log    *zap.Logger
}

// clusterHost is the version manager as the cluster controller drives it
// (membership.Gainer): it activates versions, follows pins, and takes on
// a partition of a version it loads when the node list changed after the
// version was decided, as the Follower takes one the leader assigns.
type clusterHost struct {
	*versions.Manager
	gain *holder
}

func (h clusterHost) Gain(ctx context.Context, p dbver.Partition, peers []string) error {
	return h.gain.Fetch(ctx, p, peers)
}

// peerClient is how a node asks its peers: an HTTP client and the scheme
// it speaks (https with the cluster's TLS).
type peerClient struct {
	http   *http.Client
	scheme string
}

func (h *holder) Held(db, version string) []int { return h.mgr.Views().HeldPartitions(db, version) }

func (h *holder) Fetch(ctx context.Context, p dbver.Partition, peers []string) error {
	err := h.mgr.Replicas().Add(ctx, p, func(ctx context.Context, dir string) error {
		return copyFromPeers(ctx, h.client, h.log, peers, p, dir)
	})
	if errors.Is(err, replica.ErrNotServed) {
		return fmt.Errorf("%w: %w", coordinator.ErrNotServable, err)
	}
	return err
}

// copyFromPeers copies partition p into dir from the first of peers that
// gives it.
func copyFromPeers(ctx context.Context, client peerClient, log *zap.Logger, peers []string, p dbver.Partition, dir string) error {
	if len(peers) == 0 {
		return versions.ErrNoPeer
	}
	for _, peer := range peers {
		err := transfer.Fetch(ctx, client.http, client.scheme, peer, p, dir)
		if err == nil {
			return nil
		}
		log.Info("copying a partition from a peer failed; trying the next", zap.String("peer", peer),
			zap.String("db", p.DB), zap.String("version", p.Version), zap.Int("partition", p.P), zap.Error(err))
		os.RemoveAll(dir)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return errors.New("daemon: no peer could give the partition")
}

// peerCopier is the version manager's Hooks.CopyPartition in cluster
// mode: a partition (corrupt, or of a version being loaded) is copied
// from the other replicas the cluster map lists.
func peerCopier(conn topo.Conn, self string, client peerClient, log *zap.Logger) func(ctx context.Context, p dbver.Partition, dir string) error {
	return func(ctx context.Context, p dbver.Partition, dir string) error {
		var peers []string
		for _, addr := range conn.Map().Replicas(p.DB, p.Version, p.P) {
			if addr != self {
				peers = append(peers, addr)
			}
		}
		return copyFromPeers(ctx, client, log, peers, p, dir)
	}
}

func (h *holder) Drop(ctx context.Context, p dbver.Partition) error {
	return h.mgr.Replicas().Drop(ctx, p)
}
