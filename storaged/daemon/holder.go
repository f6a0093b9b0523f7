package daemon

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"

	"go.uber.org/zap"

	"spangle/storaged/coordinator"
	"spangle/storaged/transfer"
	"spangle/storaged/versions"
)

// holder is the coordinator Follower's view of the version manager: a
// partition the leader assigns here is copied from a live peer, or built
// from the source when no peer can give it.
type holder struct {
	mgr    *versions.Manager
	client *http.Client
	log    *zap.Logger
}

func (h *holder) Held(db, version string) []int { return h.mgr.HeldPartitions(db, version) }

func (h *holder) Fetch(ctx context.Context, db, version string, p int, peers []string) error {
	err := h.mgr.AddPartition(ctx, db, version, p, func(ctx context.Context, dir string) error {
		for _, peer := range peers {
			err := transfer.Fetch(ctx, h.client, peer, db, version, p, dir)
			if err == nil {
				return nil
			}
			h.log.Info("copying a partition from a peer failed; trying the next", zap.String("peer", peer),
				zap.String("db", db), zap.String("version", version), zap.Int("partition", p), zap.Error(err))
			os.RemoveAll(dir)
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
		return errors.New("daemon: no peer could give the partition")
	})
	if errors.Is(err, versions.ErrVersionNotHeld) {
		return fmt.Errorf("%w: %w", coordinator.ErrNotServable, err)
	}
	return err
}

func (h *holder) Drop(ctx context.Context, db, version string, p int) error {
	return h.mgr.DropPartition(ctx, db, version, p)
}
