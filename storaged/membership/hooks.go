package membership

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"go.uber.org/zap"

	"spangle/shared/dbver"
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
	k := dbver.Of(db, version)
	c.mu.Lock()
	t := c.tracked[k]
	if t == nil {
		t = &tracked{n: n}
		c.tracked[k] = t
	}
	c.mu.Unlock()
	held, sig, err := c.decide(ctx, db, version, n)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		if c.tracked[k] == t {
			delete(c.tracked, k)
		}
		return nil, err
	}
	t.held, t.sig = held, sig
	return held, nil
}

// decide returns the partitions this node holds and the node list
// (nodeSignature) it decided them under.
func (c *Controller) decide(ctx context.Context, db, version string, n int) ([]int, string, error) {
	waited := false
	for {
		if err := c.waitConverged(ctx); err != nil {
			return nil, "", err
		}
		info, err := c.opts.Conn.PublishVersion(ctx, db, version, topo.VersionInfo{NumPartitions: n, Created: c.opts.Now().UTC()})
		if errors.Is(err, topo.ErrUnavailable) {
			if !waited {
				c.log.Info("coordination service unavailable; version waits", zap.String("db", db), zap.String("version", version))
				waited = true
			}
			if err := wait.Sleep(ctx, retryUnavailable); err != nil {
				return nil, "", err
			}
			continue
		}
		if err != nil {
			return nil, "", fmt.Errorf("cluster: publishing %s/%s: %w", db, version, err)
		}
		if info.NumPartitions != n {
			return nil, "", fmt.Errorf("%w: %s/%s has %d files here, %d in the cluster", ErrPartitionCount, db, version, n, info.NumPartitions)
		}
		m := c.opts.Conn.Map()
		held := c.holdings(ctx, m, db, version, n)
		c.log.Info("partitions decided", zap.String("db", db), zap.String("version", version),
			zap.Int("partitions", n), zap.Ints("held", held))
		return held, nodeSignature(m), nil
	}
}

// guess is Hooks.Guess: once the node list has been stable for
// guessAfter, with a live session and this node in it, the partitions
// holdings gives under the map then: what the decision gives too unless
// the node list changes before it converges. false once converged (held
// answers at once: no need to guess) or when ctx ends.
func (c *Controller) guess(ctx context.Context, db, version string, n int) ([]int, bool) {
	for {
		c.mu.Lock()
		converged, settled, ch := c.converged, c.settled, c.changed
		c.mu.Unlock()
		if converged {
			return nil, false
		}
		if settled {
			break
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, false
		}
	}
	return c.holdings(ctx, c.opts.Conn.Map(), db, version, n), true
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
	delete(c.tracked, dbver.Of(db, version))
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

// pruneTimeout bounds one dbRemoved: the manager tries again at its next
// scan.
const pruneTimeout = 30 * time.Second

// dbRemoved is Hooks.DBRemoved: this node has withdrawn every partition
// of db, which left the source, and deletes the db's version entries
// (partitions/<db>/<version> and assignments/<db>/<version>, then the
// db's own entries) with PruneVersion, so that routers learn the db is
// gone (404) rather than unreachable (502). PruneVersion deletes a
// version only while no node publishes a partition of it: of the nodes
// that served the db, the last to withdraw succeeds, and the earlier
// ones (false) look again at their next scan, when the entries are gone
// and they are done too. A node that dies instead of withdrawing holds
// its entries until its session expires; the nodes still up delete them
// at a scan after that. A node that restarts after the removal knows
// nothing of the db and does nothing: its entries went with its old
// session, and the nodes that withdrew look after the rest.
//
// It reports true once none of the db's version entries are left that
// this node knows of: those in its map, and the assignments.
func (c *Controller) dbRemoved(ctx context.Context, db string) (bool, error) {
	c.mu.Lock()
	// A db added again starts afresh: its versions may be older than the
	// ones it had. (tracked is left alone: a version of the db added
	// again may be tracked already; beforeRemove forgot the old ones.)
	delete(c.lastActive, db)
	c.mu.Unlock()
	if c.opts.Coord == nil {
		return true, nil
	}
	ctx, cancel := context.WithTimeout(ctx, pruneTimeout)
	defer cancel()
	names := map[string]bool{}
	for _, v := range c.opts.Conn.Map().VersionNames(db) {
		names[v] = true
	}
	as, err := c.opts.Coord.Assignments(ctx)
	if err != nil {
		return false, fmt.Errorf("cluster: reading the assignments of removed db %s: %w", db, err)
	}
	for _, a := range as {
		if a.DB == db {
			names[a.Version] = true
		}
	}
	var served, pruned []string
	for _, v := range slices.Sorted(maps.Keys(names)) {
		gone, err := c.opts.Coord.PruneVersion(ctx, db, v)
		if err != nil {
			return false, fmt.Errorf("cluster: deleting the entries of removed db %s at %s: %w", db, v, err)
		}
		if gone {
			pruned = append(pruned, v)
		} else {
			served = append(served, v)
		}
	}
	if len(served) > 0 {
		c.log.Info("db removed from the source: other nodes still publish some of its versions",
			zap.String("db", db), zap.Strings("published", served), zap.Strings("deleted", pruned))
		return false, nil
	}
	c.log.Info("db removed from the source: its entries are deleted from the cluster",
		zap.String("db", db), zap.Strings("versions", pruned))
	return true, nil
}
