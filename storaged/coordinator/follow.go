package coordinator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"spangle/shared/dbver"
	"spangle/shared/topo"
	"spangle/shared/wait"
)

// ErrNotServable is what a Holder's Fetch returns (wrapped) when the node
// does not serve the version at all yet (still loading it, say): the
// Follower tries again next round without a warning.
var ErrNotServable = errors.New("coordinator: version not servable here")

// Holder is the node's local store as a Follower drives it.
type Holder interface {
	// Held lists the partitions of db/version held locally.
	Held(db, version string) []int
	// Fetch makes partition p servable locally, from one of peers
	// (addresses that serve it now) or from the source, and returns once
	// it is.
	Fetch(ctx context.Context, p dbver.Partition, peers []string) error
	// Drop removes partition p from the local store.
	Drop(ctx context.Context, p dbver.Partition) error
}

// FollowerOptions configures a Follower. Zero values select the
// defaults noted.
type FollowerOptions struct {
	// Conn publishes the partitions; required.
	Conn topo.Conn
	// Coord reads the assignments; required.
	Coord topo.Coordination
	// Self is this node; Addr and ShardID are required.
	Self topo.Node
	// Holder is the local store; required.
	Holder Holder
	// Interval is how often assignments are read; default DefaultInterval.
	Interval time.Duration
	// Concurrency is how many fetches run at once; default 2.
	Concurrency int
	// Log defaults to no logging.
	Log *zap.Logger
}

// Follower makes a node hold what the assignments give its shard id:
// it fetches and publishes the partitions it gains, and unpublishes and
// drops those it loses only once every new holder has published them,
// so a move never lowers the replication. Versions without an
// assignment are left alone. It is safe for concurrent use.
type Follower struct {
	opts FollowerOptions
	log  *zap.Logger
	sem  chan struct{}

	mu       sync.Mutex
	inFlight map[dbver.Partition]bool // guarded by mu
}

// NewFollower returns a Follower; Run starts it.
func NewFollower(opts FollowerOptions) (*Follower, error) {
	if opts.Conn == nil || opts.Coord == nil || opts.Holder == nil {
		return nil, errors.New("coordinator: Conn, Coord and Holder are required")
	}
	if err := topo.CheckNode(&opts.Self); err != nil {
		return nil, fmt.Errorf("coordinator: %w", err)
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 2
	}
	if opts.Log == nil {
		opts.Log = zap.NewNop()
	}
	return &Follower{opts: opts, log: opts.Log, sem: make(chan struct{}, opts.Concurrency), inFlight: map[dbver.Partition]bool{}}, nil
}

// Run follows the assignments until ctx ends, and returns nil then.
func (f *Follower) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	wait.Every(ctx, f.opts.Interval, func(ctx context.Context) {
		if as, err := f.opts.Coord.Assignments(ctx); err == nil {
			for _, a := range as {
				f.follow(ctx, &wg, a)
			}
		}
	})
	return nil
}

// follow starts the fetches and does the drops that a asks of this node.
func (f *Follower) follow(ctx context.Context, wg *sync.WaitGroup, a topo.Assignment) {
	m := f.opts.Conn.Map()
	v := m.Version(a.DB, a.Version)
	if v == nil || v.NumPartitions != len(a.Replicas) {
		return
	}
	// Only the served version's assignment (the pinned one while it is
	// complete) is followed, as the leader only writes those: an older version's is stale once a newer one is
	// complete, and the node may have deleted that version already.
	if servedVersion(m, a.DB, 1) != a.Version {
		return
	}
	pub := Published(m, v)
	held := f.opts.Holder.Held(a.DB, a.Version)
	self := f.opts.Self
	for p := range a.Replicas {
		should := Holds(a, pub, self.ShardID, p)
		has := slices.Contains(held, p)
		k := dbver.Of(a.DB, a.Version).Partition(p)
		switch {
		case should && !has:
			f.startFetch(ctx, wg, k, peersOf(m, k, self.Addr))
		case should && has && !slices.Contains(m.Replicas(a.DB, a.Version, p), self.Addr):
			if err := f.opts.Conn.PublishPartition(ctx, a.DB, a.Version, p, self.Addr); err != nil {
				f.log.Debug("publishing a held partition", zap.Error(err))
			}
		case !should && has && !f.busy(k):
			if err := f.opts.Conn.UnpublishPartition(ctx, a.DB, a.Version, p, self.Addr); err != nil {
				continue // keep it until the map can say it is gone
			}
			if err := f.opts.Holder.Drop(ctx, dbver.Of(a.DB, a.Version).Partition(p)); err != nil {
				f.log.Warn("dropping a partition no longer assigned", zap.String("db", a.DB),
					zap.String("version", a.Version), zap.Int("partition", p), zap.Error(err))
				continue
			}
			f.log.Info("partition handed over", zap.String("db", a.DB), zap.String("version", a.Version), zap.Int("partition", p))
		}
	}
}

func peersOf(m *topo.Map, k dbver.Partition, self string) []string {
	var peers []string
	for _, addr := range m.Replicas(k.DB, k.Version, k.P) {
		if addr != self {
			peers = append(peers, addr)
		}
	}
	return peers
}

func (f *Follower) busy(k dbver.Partition) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.inFlight[k]
}

// startFetch fetches and publishes one partition in the background,
// unless it is being fetched already.
func (f *Follower) startFetch(ctx context.Context, wg *sync.WaitGroup, k dbver.Partition, peers []string) {
	f.mu.Lock()
	if f.inFlight[k] {
		f.mu.Unlock()
		return
	}
	f.inFlight[k] = true
	f.mu.Unlock()
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer func() {
			f.mu.Lock()
			delete(f.inFlight, k)
			f.mu.Unlock()
		}()
		select {
		case f.sem <- struct{}{}:
		case <-ctx.Done():
			return
		}
		defer func() { <-f.sem }()
		log := f.log.With(zap.String("db", k.DB), zap.String("version", k.Version), zap.Int("partition", k.P))
		if err := f.opts.Holder.Fetch(ctx, k, peers); err != nil {
			switch {
			case ctx.Err() != nil:
			case errors.Is(err, ErrNotServable):
				log.Debug("assigned partition of a version not servable here yet", zap.Error(err))
			default:
				log.Warn("fetching an assigned partition; trying again next round", zap.Error(err))
			}
			return
		}
		if err := f.opts.Conn.PublishPartition(ctx, k.DB, k.Version, k.P, f.opts.Self.Addr); err != nil && !errors.Is(err, topo.ErrUnavailable) {
			log.Warn("publishing a fetched partition", zap.Error(err))
			return
		}
		log.Info("assigned partition fetched and published", zap.Strings("peers", peers))
	}()
}

// oneAssignment is a Coordination that reads one db version's
// assignment alone (zktopo's): AssignedTo, called for each version a node
// decides, then reads one znode rather than every db's assignments.
type oneAssignment interface {
	Assignment(ctx context.Context, db, version string) (a topo.Assignment, ok bool, err error)
}

// AssignedTo returns the partitions of db/version (n of them) that the
// assignment gives shard, and false when no assignment covers the
// version or it cannot be read now (the placement strategy decides
// then). It is what storaged's cluster controller asks first when it
// decides the partitions of a version it loads (cluster's holdings).
func AssignedTo(ctx context.Context, conn topo.Conn, coord topo.Coordination, shard, db, version string, n int) ([]int, bool) {
	var (
		a  topo.Assignment
		ok bool
	)
	if one, can := coord.(oneAssignment); can {
		var err error
		if a, ok, err = one.Assignment(ctx, db, version); err != nil {
			return nil, false
		}
	} else {
		as, err := coord.Assignments(ctx)
		if err != nil {
			return nil, false
		}
		a, ok = assignmentFor(as, db, version)
	}
	if !ok || len(a.Replicas) != n {
		return nil, false
	}
	var pub [][]string
	m := conn.Map()
	if v := m.Version(db, version); v != nil {
		pub = Published(m, v)
	}
	held := []int{}
	for p := range a.Replicas {
		if Holds(a, pub, shard, p) {
			held = append(held, p)
		}
	}
	return held, true
}
