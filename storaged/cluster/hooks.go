package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"spangle/shared/topo"
	"spangle/shared/wait"
)

// retryUnavailable is how long held waits before trying the coordination
// service again after it answered ErrUnavailable while connected.
const retryUnavailable = 200 * time.Millisecond

// held is Hooks.Held: it waits until the node list has converged with a
// live session, records the version's partition count in the cluster
// (the first node's count wins), and decides the partitions (holdings).
func (c *Controller) held(ctx context.Context, db, version string, n int) ([]int, error) {
	k := vkey{db, version}
	c.mu.Lock()
	t := c.tracked[k]
	if t == nil {
		t = &tracked{n: n}
		c.tracked[k] = t
	}
	c.mu.Unlock()
	held, err := c.decide(ctx, db, version, n)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		if c.tracked[k] == t {
			delete(c.tracked, k)
		}
		return nil, err
	}
	t.held = held
	return held, nil
}

func (c *Controller) decide(ctx context.Context, db, version string, n int) ([]int, error) {
	waited := false
	for {
		if err := c.waitConverged(ctx); err != nil {
			return nil, err
		}
		info, err := c.opts.Conn.PublishVersion(ctx, db, version, topo.VersionInfo{NumPartitions: n, Created: c.opts.Now().UTC()})
		if errors.Is(err, topo.ErrUnavailable) {
			if !waited {
				c.log.Info("coordination service unavailable; version waits", zap.String("db", db), zap.String("version", version))
				waited = true
			}
			if err := wait.Sleep(ctx, retryUnavailable); err != nil {
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("cluster: publishing %s/%s: %w", db, version, err)
		}
		if info.NumPartitions != n {
			return nil, fmt.Errorf("%w: %s/%s has %d files here, %d in the cluster", ErrPartitionCount, db, version, n, info.NumPartitions)
		}
		held := c.holdings(ctx, c.opts.Conn.Map(), db, version, n)
		c.log.Info("partitions decided", zap.String("db", db), zap.String("version", version),
			zap.Int("partitions", n), zap.Ints("held", held))
		return held, nil
	}
}

// waitConverged blocks until the controller is converged or ctx ends.
func (c *Controller) waitConverged(ctx context.Context) error {
	for {
		c.mu.Lock()
		ok, ch := c.converged, c.changed
		c.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// partitionReady is Hooks.PartitionReady: the partition is published.
// While the service is away the Conn remembers it and publishes later.
func (c *Controller) partitionReady(db, version string, p, n int) {
	err := c.opts.Conn.PublishPartition(c.ctx(), db, version, p, c.opts.Node.Addr)
	switch {
	case errors.Is(err, topo.ErrUnavailable):
		c.log.Info("coordination service unavailable; partition will be published once it is back",
			zap.String("db", db), zap.String("version", version), zap.Int("partition", p))
	case err != nil:
		c.log.Error("publishing partition", zap.String("db", db), zap.String("version", version), zap.Int("partition", p), zap.Error(err))
	}
}

// beforeRemove is Hooks.BeforeRemove: the version's partitions leave the
// cluster map before the data goes.
func (c *Controller) beforeRemove(db, version string, partitions []int) {
	c.mu.Lock()
	delete(c.tracked, vkey{db, version})
	c.mu.Unlock()
	for _, p := range partitions {
		err := c.opts.Conn.UnpublishPartition(c.ctx(), db, version, p, c.opts.Node.Addr)
		if err != nil && !errors.Is(err, topo.ErrUnavailable) {
			c.log.Warn("unpublishing partition", zap.String("db", db), zap.String("version", version), zap.Int("partition", p), zap.Error(err))
		}
	}
	c.log.Info("unpublished version before removing it", zap.String("db", db), zap.String("version", version), zap.Ints("partitions", partitions))
}

// ctx is Run's context, or Background before Run.
func (c *Controller) ctx() context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.runCtx == nil {
		return context.Background()
	}
	return c.runCtx
}
