package membership

import (
	"context"

	"spangle/shared/placement"
	"spangle/shared/topo"
)

// holdings is how this node decides which of db/version's n partitions it
// holds, the whole decision in one place, read against m, the live
// cluster map:
//
//  1. The coordinator's assignment (Options.Assigned), when one covers
//     the version, is the answer as it is; the leader's decision is
//     followed whole, and the filter of step 3 does not touch it.
//  2. Otherwise the strategy decides: placement.Held under
//     Options.Strategy over m's live shard ids, this node's always among
//     them.
//  3. The max_replication filter then drops, from the strategy's answer,
//     the partitions that already have MaxReplication live replicas on
//     other nodes.
func (c *Controller) holdings(ctx context.Context, m *topo.Map, db, version string, n int) []int {
	if c.opts.Assigned != nil {
		if a, ok := c.opts.Assigned(ctx, db, version, n); ok {
			return a
		}
	}
	shards := append(m.ShardIDs(), c.opts.Node.ShardID)
	dealt := placement.Held(c.opts.Strategy, c.opts.Node.ShardID, shards, n, c.opts.Replication)
	held := make([]int, 0, len(dealt))
	for _, p := range dealt {
		if limit := c.opts.MaxReplication; limit > 0 {
			others := 0
			for _, addr := range m.Replicas(db, version, p) {
				if addr != c.opts.Node.Addr {
					others++
				}
			}
			if others >= limit {
				continue
			}
		}
		held = append(held, p)
	}
	return held
}
