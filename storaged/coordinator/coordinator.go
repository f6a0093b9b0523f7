package coordinator

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"spangle/shared/dbver"
	"spangle/shared/placement"
	"spangle/shared/source"
	"spangle/shared/topo"
	"spangle/shared/wait"
)

// Defaults of Options.
const (
	DefaultRereplicateAfter = 5 * time.Minute
	DefaultPruneAfter       = 5 * time.Minute
	DefaultInterval         = time.Second
)

// Options configures a Coordinator. Zero values select the defaults noted.
type Options struct {
	// Conn is the node's coordination session, for the cached map;
	// required.
	Conn topo.Conn
	// Coord is the same session's election and decisions; required.
	Coord topo.Coordination
	// Self is this node as registered; Addr and ShardID are required. Its
	// Addr is its id in the election.
	Self topo.Node
	// Strategy places copies; default placement.Sequins. Only
	// Rendezvous rebalances when a node joins.
	Strategy placement.Strategy
	// Replication is the copies of each partition; default
	// placement.DefaultReplication.
	Replication int
	// RereplicateAfter is how long a node must have been gone before its
	// copies are given to others; default DefaultRereplicateAfter.
	// Negative turns re-replication off (the config's 0).
	RereplicateAfter time.Duration
	// MinReplication is how many live replicas every partition of a
	// version needs for it to be complete, as the nodes and routers
	// count it; default 1. Only versions older than a complete one are
	// pruned.
	MinReplication int
	// PruneAfter is how long a version older than a complete one must
	// have had no live replica, every round as the leader saw it, before
	// the leader deletes its entries (partitions/<db>/<version> and its
	// assignment); default DefaultPruneAfter. It must outlast what a node
	// takes to publish again what it serves (a session lost and made
	// anew). Negative turns pruning off (the config's 0).
	PruneAfter time.Duration
	// Quorum of ELECT votes needed to commit; default QuorumAll.
	Quorum Quorum
	// Interval is how often the leader looks at the cluster, and a
	// follower refreshes its status; default DefaultInterval.
	Interval time.Duration
	// ElectTimeout bounds one ELECT round; default 5s.
	ElectTimeout time.Duration
	// Client sends ELECT requests; default a client of its own.
	Client *http.Client
	// Scheme of ELECT requests: "http" (default), or "https" when Client
	// speaks the cluster's TLS.
	Scheme string
	// PartitionState returns this node's state of a partition for ELECT
	// answers; default from the map: PUBLISHED or NOTFOUND.
	PartitionState func(p dbver.Partition) string
	// Source is the source root, whose _PIN markers the leader reads
	// and publishes as pins/<db>; nil publishes none.
	Source source.Source
	// PinPeriod is how often the leader reads every db's _PIN marker
	// (one read a db, on S3 a request); RefreshPins asks for a read at
	// the next round. 0 reads them every round (Interval); negative,
	// only when a node becomes leader and on RefreshPins. storaged
	// passes its refresh_period (its 0 as negative), so markers are read
	// as often as the nodes scan the source, not every second per db.
	PinPeriod time.Duration
	// Registerer receives the coordinator's metrics
	// (spangle_storaged_leader_rounds_failed_total,
	// spangle_storaged_leader_failing); nil registers nowhere.
	Registerer prometheus.Registerer
	// Log defaults to no logging.
	Log *zap.Logger
	// Now defaults to time.Now.
	Now func() time.Time
}

// Coordinator runs one node's part of the coordination: it campaigns
// for leadership, and while it leads it re-replicates the copies of
// nodes gone for RereplicateAfter, with the rendezvous strategy
// rebalances onto nodes that joined, and prunes the entries of versions
// superseded and unserved for PruneAfter. Every node answers ELECT (it
// is an http.Handler for ElectPrefix). It is safe for concurrent use.
type Coordinator struct {
	opts    Options
	log     *zap.Logger
	metrics *metrics

	mu     sync.Mutex
	status Status // guarded by mu

	// pinsNow asks the next round to read the markers (RefreshPins);
	// pinsRead is when the leader last read them (its rounds only).
	pinsNow  atomic.Bool
	pinsRead time.Time
}

// RefreshPins makes the leader read the _PIN markers at its next round
// rather than at the end of PinPeriod (storaged calls it on SIGHUP).
func (c *Coordinator) RefreshPins() { c.pinsNow.Store(true) }

// pinsDue reports whether a round at now reads the markers.
func (c *Coordinator) pinsDue(now time.Time) bool {
	if c.pinsNow.Swap(false) || c.pinsRead.IsZero() || (c.opts.PinPeriod > 0 && now.Sub(c.pinsRead) >= c.opts.PinPeriod) {
		c.pinsRead = now
		return true
	}
	return false
}

// New returns a Coordinator; Run starts it.
func New(opts Options) (*Coordinator, error) {
	if opts.Conn == nil || opts.Coord == nil {
		return nil, errors.New("coordinator: Conn and Coord are required")
	}
	if err := topo.CheckNode(&opts.Self); err != nil {
		return nil, fmt.Errorf("coordinator: %w", err)
	}
	if opts.Strategy == nil {
		opts.Strategy = placement.Sequins{}
	}
	if opts.Replication <= 0 {
		opts.Replication = placement.DefaultReplication
	}
	if opts.RereplicateAfter == 0 {
		opts.RereplicateAfter = DefaultRereplicateAfter
	}
	if opts.MinReplication <= 0 {
		opts.MinReplication = 1
	}
	if opts.PruneAfter == 0 {
		opts.PruneAfter = DefaultPruneAfter
	}
	if opts.Quorum == "" {
		opts.Quorum = QuorumAll
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.PinPeriod == 0 {
		opts.PinPeriod = opts.Interval
	}
	if opts.ElectTimeout <= 0 {
		opts.ElectTimeout = defaultElectTimeout
	}
	if opts.Client == nil {
		opts.Client = &http.Client{}
	}
	if opts.Scheme == "" {
		opts.Scheme = "http"
	}
	if opts.Log == nil {
		opts.Log = zap.NewNop()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	c := &Coordinator{opts: opts, log: opts.Log, metrics: m}
	if opts.PartitionState == nil {
		c.opts.PartitionState = c.mapState
	}
	return c, nil
}

// mapState is the default PartitionState: whether this node publishes
// the partition.
func (c *Coordinator) mapState(p dbver.Partition) string {
	for _, addr := range c.opts.Conn.Map().Replicas(p.DB, p.Version, p.P) {
		if addr == c.opts.Self.Addr {
			return StatePublished
		}
	}
	return StateNotFound
}

// Run campaigns, leads when elected, and keeps the status fresh, until
// ctx ends. It returns nil then.
func (c *Coordinator) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c.refreshLoop(ctx)
	}()
	defer wg.Wait()
	for ctx.Err() == nil {
		l, err := c.opts.Coord.Campaign(ctx, c.opts.Self.Addr)
		if err != nil {
			switch {
			case ctx.Err() != nil, errors.Is(err, topo.ErrClosed):
			case errors.Is(err, topo.ErrUnavailable):
				c.log.Debug("campaign waits for the coordination service", zap.Error(err))
			default:
				c.log.Warn("campaign failed; trying again", zap.Error(err))
			}
			if errors.Is(err, topo.ErrClosed) {
				return nil
			}
			_ = wait.Sleep(ctx, c.opts.Interval) // ctx's end is seen at the loop's top
			continue
		}
		c.log.Info("leading the cluster", zap.String("token", l.Token()))
		c.setLeading(l.Token(), true)
		c.lead(ctx, l)
		c.setLeading(l.Token(), false)
		if ctx.Err() != nil {
			rctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			l.Resign(rctx)
			cancel()
		}
	}
	return nil
}

// lead runs the leader's rounds until the leadership is lost or ctx ends.
func (c *Coordinator) lead(ctx context.Context, l topo.Leadership) {
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-l.Lost():
			c.log.Warn("leadership lost")
			cancel()
		case <-lctx.Done():
		}
	}()
	lt := newLeaderState()
	tk := time.NewTicker(c.opts.Interval)
	defer tk.Stop()
	last := "" // the last round's error, logged once
	defer c.setRoundError(nil)
	for {
		err := c.round(lctx, l, lt)
		switch {
		case err == nil:
			last = ""
			c.setRoundError(nil)
		case lctx.Err() != nil:
		default:
			// A leader that cannot decide leaves the cluster without
			// re-replication, rebalancing or new pins: an operator must
			// hear of it (the log, the status page, the metrics).
			c.metrics.roundsFailed.Inc()
			c.setRoundError(err)
			if err.Error() != last {
				last = err.Error()
				c.log.Warn("leader round ended without a decision; trying again each round", zap.Error(err))
			}
		}
		select {
		case <-lctx.Done():
			return
		case <-tk.C:
		}
	}
}
