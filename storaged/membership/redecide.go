package membership

import (
	"context"
	"slices"
	"time"

	"go.uber.org/zap"

	"spangle/shared/dbver"
	"spangle/shared/topo"
	"spangle/shared/wait"
)

// Gainer is an Activator that can also take on one more partition of a
// version it loads: copied from one of peers (addresses serving it now)
// or built from the source, servable here and published (through
// Hooks.PartitionReady) once Gain returns nil. It fails while the version
// is still loading here; Run tries again.
type Gainer interface {
	Gain(ctx context.Context, p dbver.Partition, peers []string) error
}

// retryGain is how long a gain waits before trying a partition again.
const retryGain = time.Second

// redecide takes on the partitions a changed node list gives this node
// for versions decided but not yet complete.
//
// Nodes decide a version's partitions when each of them sees it, each
// under the node list it sees then. A node that leaves in those seconds
// (a crash, a container removed: its registration lasts until its
// session expires) is in the list of the nodes that decided first and not
// in that of the later ones, and a partition can then fall to no live
// node at all: the version would never be complete. So once the list is
// stable again (sig, converged), each node decides such versions again
// under it and takes what that adds. It drops nothing: a copy it holds
// beyond the new decision goes with the version.
func (c *Controller) redecide(ctx context.Context, m *topo.Map, sig string, g Gainer) {
	type todo struct {
		k dbver.Version
		t *tracked
	}
	var list []todo
	c.mu.Lock()
	for k, t := range c.tracked {
		if t.activated || t.held == nil || t.gaining || t.sig == sig {
			continue
		}
		t.sig = sig
		list = append(list, todo{k, t})
	}
	c.mu.Unlock()
	for _, td := range list {
		c.mu.Lock()
		n, held := td.t.n, slices.Clone(td.t.held)
		c.mu.Unlock()
		var gained []int
		for _, p := range c.holdings(ctx, m, td.k.DB, td.k.Version, n) {
			if !slices.Contains(held, p) {
				gained = append(gained, p)
			}
		}
		if len(gained) == 0 {
			continue
		}
		c.log.Info("node list changed since the version was decided; taking the partitions the new list gives this node",
			zap.String("db", td.k.DB), zap.String("version", td.k.Version), zap.Ints("held", held), zap.Ints("gained", gained))
		c.mu.Lock()
		td.t.gaining = true
		c.mu.Unlock()
		go c.gain(ctx, td.k, td.t, gained, g)
	}
}

// gain makes each partition of gained servable here (and published),
// trying again every retryGain until it is, the version is activated or
// no longer tracked, or ctx ends. A partition that has its full
// replication elsewhere by then is left to the others.
func (c *Controller) gain(ctx context.Context, k dbver.Version, t *tracked, gained []int, g Gainer) {
	defer func() {
		c.mu.Lock()
		t.gaining = false
		c.mu.Unlock()
	}()
	for _, p := range gained {
		logged := false
		for {
			c.mu.Lock()
			gone := t.activated || c.tracked[k] != t
			c.mu.Unlock()
			if gone || ctx.Err() != nil {
				return
			}
			var peers []string
			for _, addr := range c.opts.Conn.Map().Replicas(k.DB, k.Version, p) {
				if addr != c.opts.Node.Addr {
					peers = append(peers, addr)
				}
			}
			if len(peers) >= c.opts.Replication {
				break
			}
			err := g.Gain(ctx, dbver.Partition{DB: k.DB, Version: k.Version, P: p}, peers)
			if err == nil {
				c.mu.Lock()
				if !slices.Contains(t.held, p) {
					t.held = append(t.held, p)
				}
				c.mu.Unlock()
				break
			}
			if !logged {
				c.log.Info("cannot take the partition yet; trying again", zap.String("db", k.DB), zap.String("version", k.Version),
					zap.Int("partition", p), zap.Error(err))
				logged = true
			}
			if wait.Sleep(ctx, retryGain) != nil {
				return
			}
		}
	}
}
