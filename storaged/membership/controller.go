package membership

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"spangle/shared/dbver"
	"spangle/shared/placement"
	"spangle/shared/topo"
	"spangle/storaged/versions"
)

// Defaults of Options.
const (
	DefaultPollInterval = 100 * time.Millisecond
)

// ErrPartitionCount means the cluster already knows the version with a
// different number of partitions than this node's source shows: the
// nodes do not see the same files, and loading it would split keys
// differently from its peers.
var ErrPartitionCount = errors.New("cluster: partition count differs from the cluster's")

// Activator switches clients to a version: the version manager.
type Activator interface {
	Activate(db, version string) error
}

// Options configures a Controller. Zero values select the defaults noted.
type Options struct {
	// Conn is the coordination service; required.
	Conn topo.Conn
	// Coord is the same session's coordination, when the service offers
	// it: with it, the entries of a db removed from the source are
	// deleted once no node publishes it (Hooks.DBRemoved). nil leaves
	// them.
	Coord topo.Coordination
	// Node is this node as it registers itself: ID, ShardID and Addr are
	// required.
	Node topo.Node
	// Replication is how many copies of each partition the strategy
	// places; default placement.DefaultReplication.
	Replication int
	// MinReplication is how many live replicas every partition needs
	// before clients are switched to a version; default 1.
	MinReplication int
	// MaxReplication skips a partition the strategy gives this node when
	// it already has that many live replicas; 0 means no limit.
	MaxReplication int
	// TimeToConverge is how long the node list must stay unchanged before
	// the node decides which partitions it holds; 0 decides as soon as
	// the node sees itself registered.
	TimeToConverge time.Duration
	// PollInterval is how often the connection state is checked between
	// map changes; default DefaultPollInterval.
	PollInterval time.Duration
	// Strategy deals a version's partitions over the shard ids when no
	// assignment covers it (see holdings); nil is the sequins ring
	// (placement.Assign).
	Strategy placement.Strategy
	// Assigned returns the partitions of db/version (n of them) that the
	// coordinator's assignment gives this node, and false when no
	// assignment covers the version (the strategy decides then). nil: the
	// strategy always decides.
	Assigned func(ctx context.Context, db, version string, n int) ([]int, bool)
	// Log defaults to no logging.
	Log *zap.Logger
	// Now defaults to time.Now.
	Now func() time.Time
}

// tracked is what the controller knows of one version the manager builds.
type tracked struct {
	n         int
	held      []int  // nil until decided
	sig       string // the node list held was decided under (nodeSignature)
	gaining   bool   // a gain (redecide.go) is taking partitions for it
	activated bool
}

// Controller runs one node's part of the cluster protocol. It is safe for
// concurrent use; Hooks are called by the version manager, Run drives
// membership and activation.
type Controller struct {
	opts Options
	log  *zap.Logger

	mu         sync.Mutex
	converged  bool                       // guarded by mu
	settled    bool                       // guarded by mu; stable for guessAfter (guess)
	changed    chan struct{}              // guarded by mu; closed when converged or settled changes
	tracked    map[dbver.Version]*tracked // guarded by mu
	lastActive map[string]string          // guarded by mu; newest version activated per db
	lastPins   map[string]topo.Pin        // guarded by mu; the pins Run last saw
	runCtx     context.Context            // guarded by mu; Run's context once running
}

// New returns a Controller; Run starts it.
func New(opts Options) (*Controller, error) {
	if opts.Conn == nil {
		return nil, errors.New("cluster: Conn is required")
	}
	if err := topo.CheckShardID(opts.Node.ShardID); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	if err := topo.CheckAddr(opts.Node.Addr); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	if opts.Node.ID == "" {
		return nil, errors.New("cluster: Node.ID is required")
	}
	if opts.Replication <= 0 {
		opts.Replication = placement.DefaultReplication
	}
	if opts.MinReplication <= 0 {
		opts.MinReplication = 1
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	if opts.Log == nil {
		opts.Log = zap.NewNop()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Controller{
		opts: opts, log: opts.Log,
		changed:    make(chan struct{}),
		tracked:    map[dbver.Version]*tracked{},
		lastActive: map[string]string{},
	}, nil
}

// Hooks returns the version manager's hooks for cluster mode: versions
// wait for the cluster before deciding their partitions and for Activate
// before serving clients.
func (c *Controller) Hooks() versions.Hooks {
	return versions.Hooks{
		Held:           c.held,
		Gated:          true,
		PartitionReady: c.partitionReady,
		BeforeRemove:   c.beforeRemove,
		DBRemoved:      c.dbRemoved,
		Pin:            c.pin,
		BuildOrder:     c.buildOrder,
		PeerServed:     c.peerServed,
		Guess:          c.guess,
	}
}

// peerServed reports whether another node's replica of partition p of
// db/version is in the cluster map.
func (c *Controller) peerServed(db, version string, p int) bool {
	for _, addr := range c.opts.Conn.Map().Replicas(db, version, p) {
		if addr != c.opts.Node.Addr {
			return true
		}
	}
	return false
}

// buildOrder is db's place in this node's build order: the order every
// node shares, rotated by this node's rank among the nodes of the map
// (by address), so that the replicas of a partition are built at
// different times and every partition has a replica early.
func (c *Controller) buildOrder(db string) uint64 {
	m := c.opts.Conn.Map()
	addrs := make([]string, 0, len(m.Nodes))
	for addr := range m.Nodes {
		addrs = append(addrs, addr)
	}
	sort.Strings(addrs)
	rank := sort.SearchStrings(addrs, c.opts.Node.Addr)
	if rank == len(addrs) || addrs[rank] != c.opts.Node.Addr {
		rank = 0
	}
	return versions.RotatedOrder(db, rank, len(addrs))
}

// Map returns the cached cluster map, never blocking on the network.
func (c *Controller) Map() *topo.Map { return c.opts.Conn.Map() }

// Converged reports whether the node list has been stable long enough,
// with a live session, for the node to decide its partitions.
func (c *Controller) Converged() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.converged
}

// Run registers the node and then, until ctx ends, follows the cluster
// map: it tracks convergence and activates versions once complete. It
// returns nil when ctx ends, or an error if the node cannot register at
// all (a bad name).
func (c *Controller) Run(ctx context.Context, act Activator) error {
	c.mu.Lock()
	c.runCtx = ctx
	c.mu.Unlock()
	err := c.opts.Conn.RegisterNode(ctx, c.opts.Node)
	switch {
	case errors.Is(err, topo.ErrUnavailable):
		// Remembered by the Conn: it registers once the session is up.
		// At a start the session is not up yet: that is normal, and an
		// outage is warned of by the Conn itself (its first failed dial).
		c.log.Info("registering once the coordination service's session is up", zap.Error(err))
	case errors.Is(err, topo.ErrDenied):
		// A credential or ACL problem: remembered too, and tried again
		// by the Conn now and then, so that fixing it needs no restart.
		c.log.Error("the coordination service refuses this node's registration; it stays out of the cluster until allowed", zap.Error(err))
	case err != nil:
		return fmt.Errorf("cluster: registering %s: %w", topo.NodeName(c.opts.Node.ShardID, c.opts.Node.Addr), err)
	default:
		c.log.Info("registered in the cluster", zap.String("shard_id", c.opts.Node.ShardID),
			zap.String("addr", c.opts.Node.Addr), zap.String("node_id", c.opts.Node.ID))
	}

	var (
		rev        uint64
		lastSig    string
		lastChange = c.opts.Now()
		wasUp      bool
	)
	for {
		wctx, cancel := context.WithTimeout(ctx, c.opts.PollInterval)
		m, err := c.opts.Conn.Wait(wctx, rev)
		cancel()
		if ctx.Err() != nil {
			c.setState(false, false)
			return nil
		}
		if errors.Is(err, topo.ErrClosed) {
			c.setState(false, false)
			c.log.Warn("coordination service connection closed; cluster controller stops")
			return nil
		}
		if err != nil {
			m = c.opts.Conn.Map()
		}
		rev = m.Revision
		now := c.opts.Now()
		up := c.opts.Conn.Connected()
		if up != wasUp {
			if up {
				c.log.Info("coordination service connected")
			} else {
				c.log.Warn("coordination service disconnected; serving goes on, no new version is adopted")
			}
			wasUp = up
			lastChange = now
		}
		if sig := nodeSignature(m); sig != lastSig {
			lastSig = sig
			lastChange = now
		}
		_, self := m.Nodes[c.opts.Node.Addr]
		stable := now.Sub(lastChange)
		converged := up && self && stable >= c.opts.TimeToConverge
		c.setState(converged, up && self && stable >= c.guessAfter())
		if up {
			if r, ok := act.(Refresher); ok && c.pinsChanged(m) {
				r.Refresh() // the manager follows the new pin at once
			}
			c.activate(m, act)
		}
		if g, ok := act.(Gainer); ok && converged {
			c.redecide(ctx, m, lastSig, g)
		}
	}
}

// nodeSignature names the node list, to notice any change in it.
func nodeSignature(m *topo.Map) string {
	names := make([]string, 0, len(m.Nodes))
	for addr, n := range m.Nodes {
		names = append(names, topo.NodeName(n.ShardID, addr))
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}

// guessAfter is how long the node list must stay unchanged before the
// node guesses which partitions it will hold and builds them ahead of
// the decision (guess): a quarter of TimeToConverge, at most half a
// second. Nodes started together register within a moment of each
// other; a guess made before the last one did would be wrong.
func (c *Controller) guessAfter() time.Duration {
	return min(c.opts.TimeToConverge/4, 500*time.Millisecond)
}

// setState records whether the node list has been stable long enough to
// decide (converged) and to guess (settled).
func (c *Controller) setState(v, settled bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.converged == v && c.settled == settled {
		return
	}
	c.settled = settled
	c.converged = v
	close(c.changed)
	c.changed = make(chan struct{})
	if v {
		c.log.Info("node list stable; deciding partitions")
	}
}

// activate switches clients to every tracked version the map calls
// complete, never to one older than the db's last activated version.
func (c *Controller) activate(m *topo.Map, act Activator) {
	type cand struct {
		k dbver.Version
		t *tracked
	}
	var todo []cand
	c.mu.Lock()
	for k, t := range c.tracked {
		if t.activated {
			continue
		}
		ok, stale := c.mayActivateLocked(m, k.DB, k.Version)
		if stale {
			delete(c.tracked, k) // superseded before it was ever complete
			continue
		}
		if !ok {
			continue // not the pinned version: it waits for the unpin
		}
		if m.Version(k.DB, k.Version).Complete(c.opts.MinReplication) {
			todo = append(todo, cand{k, t})
		}
	}
	c.mu.Unlock()
	sort.Slice(todo, func(i, j int) bool { return todo[i].k.Version < todo[j].k.Version })
	for _, cd := range todo {
		err := act.Activate(cd.k.DB, cd.k.Version)
		c.mu.Lock()
		switch {
		case err == nil:
			cd.t.activated = true
			if cd.k.Version > c.lastActive[cd.k.DB] || m.PinOf(cd.k.DB).Version == cd.k.Version {
				// A pinned version counts as the last activated: after
				// the unpin, only newer ones are.
				c.lastActive[cd.k.DB] = cd.k.Version
			}
		case errors.Is(err, versions.ErrVersionNotHeld):
			if c.tracked[cd.k] == cd.t {
				delete(c.tracked, cd.k)
			}
		}
		c.mu.Unlock()
		if err == nil {
			c.log.Info("version complete in the cluster; serving it to clients",
				zap.String("db", cd.k.DB), zap.String("version", cd.k.Version))
		} else if !errors.Is(err, versions.ErrVersionNotHeld) {
			c.log.Warn("activating version", zap.String("db", cd.k.DB), zap.String("version", cd.k.Version), zap.Error(err))
		}
	}
}
