package versions

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"spangle/shared/dbver"
	"spangle/shared/source"
	"spangle/shared/topo"
	"spangle/storaged/loader"
	"spangle/storaged/repair"
	"spangle/storaged/store"
	"spangle/storaged/table"
)

// DefaultFallbackAfter is how long a loaded version waits for the cluster
// before the node also loads the previous version (Options.FallbackAfter).
const DefaultFallbackAfter = 10 * time.Second

// DefaultRetention is how long a replaced version keeps answering pinned
// requests after its last use.
const DefaultRetention = 10 * time.Minute

// Hooks is how cluster mode steers the manager. The zero value is
// standalone: every partition held, versions active once loaded, no
// callbacks. Hooks are called without the manager's lock held, from the
// manager's goroutines; they may block briefly.
type Hooks struct {
	// Held returns the partitions of db/version (n partitions) this node
	// holds, ascending. A nil Held means all of them. It may block until
	// the cluster can decide (the version stays BUILDING meanwhile) and
	// must return when ctx ends, which happens when the version is
	// superseded or the manager stops. An error fails the version.
	Held func(ctx context.Context, db, version string, n int) ([]int, error)
	// Gated makes a loaded version wait for Activate before it becomes
	// the active version; it answers pinned requests meanwhile.
	Gated bool
	// PartitionReady is called for each held partition once the version
	// is loaded and the partition answers requests; for the partitions of
	// one version, all at once from as many goroutines.
	PartitionReady func(db, version string, partition, n int)
	// BeforeRemove is called before a loaded version stops answering and
	// is deleted, with the partitions it held.
	BeforeRemove func(db, version string, partitions []int)
	// CopyPartition copies partition p from a peer that
	// serves it into dir, which it creates: to rebuild a corrupt one, and
	// to load a version other nodes already serve. nil, or an error
	// (wrapping ErrNoPeer when no peer serves it), builds it from the
	// source.
	CopyPartition func(ctx context.Context, p dbver.Partition, dir string) error
	// DBRemoved lets the cluster forget a db the source no longer lists,
	// once nothing of it is left on this node (after BeforeRemove of each
	// version). It reports whether the cluster is done with the db; false
	// or an error calls it again at the next scan. See storaged/dbremoval.
	DBRemoved func(ctx context.Context, db string) (bool, error)
	// Pin returns the db's pin the cluster decided (the leader publishes
	// it from the _PIN marker), followed in place of this node's own
	// reading of the marker so that every node agrees. ok false: the
	// cluster's pin is not known now, and the pin in force stays. nil:
	// standalone, the marker is read at every scan.
	Pin func(db string) (p topo.Pin, ok bool)
	// PeerServed reports whether another node serves partition p of
	// db/version now. The manager asks it when it has decided a
	// version's partitions, before the version waits for a build slot,
	// and copies from peers (CopyPartition) only the partitions served
	// then: a version pinned again, or one this node lost with its disk.
	// What peers register later, while this node waits its turn, they
	// built from the same source at the same time, and for the small
	// partitions of a start with many dbs a copy (a peer's read, a
	// transfer, a check of every block) costs more than the build. nil:
	// every partition a peer serves when it is built is copied.
	PeerServed func(db, version string, p int) bool
	// Guess returns the partitions of db/version this node will most
	// likely hold, while Held still waits for the cluster (the node list
	// must stay unchanged for time_to_converge before the node decides).
	// It blocks until it has a guess worth building; false: none (the
	// node has decided already, so Held answers at once, or ctx ended).
	// The manager builds the guess meanwhile (speculate.go) and keeps
	// the build if Held then returns the same partitions, so that a start
	// builds during the convergence wait rather than after it. Nothing is
	// published before Held returns. nil: no build before Held.
	Guess func(ctx context.Context, db, version string, n int) ([]int, bool)
	// BuildOrder places db in the order in which versions waiting to be
	// built are admitted, lowest first (see buildQueue). Cluster mode
	// rotates DBOrder by the node's place in the cluster (RotatedOrder)
	// so that the replicas of a partition are built at different times.
	// nil: first come, first built.
	BuildOrder func(db string) uint64
}

// buildOrder is db's key in the build queue: BuildOrder's, or 0 (first
// come first) without it.
func (h Hooks) buildOrder(db string) uint64 {
	if h.BuildOrder == nil {
		return 0
	}
	return h.BuildOrder(db)
}

// held returns the partitions of db/version (n partitions) this node
// holds: what Held says, or all of them without it.
func (h Hooks) held(ctx context.Context, db, version string, n int) ([]int, error) {
	if h.Held == nil {
		all := make([]int, n)
		for i := range all {
			all[i] = i
		}
		return all, nil
	}
	held, err := h.Held(ctx, db, version, n)
	if err != nil && ctx.Err() == nil {
		return nil, fmt.Errorf("versions: deciding the partitions of %s/%s: %w", db, version, err)
	}
	return held, err
}

// Options configures a Manager. Zero values select the defaults noted.
type Options struct {
	Source source.Source
	Store  *store.Store
	// Log defaults to no logging.
	Log *zap.Logger
	// Registerer receives the manager's metrics; nil registers nowhere.
	Registerer prometheus.Registerer
	// Retention: default DefaultRetention.
	Retention time.Duration
	// RefreshPeriod re-scans the source periodically; 0 only on Refresh.
	RefreshPeriod time.Duration
	// SettleTime is how long this node must have seen a version's files
	// unchanged (names, sizes and modification times), from when it first
	// saw them, before it loads the version, unless it holds _SUCCESS or
	// the local store holds it complete; 0 loads a version as soon as it
	// is listed.
	SettleTime time.Duration
	// FallbackAfter (with Hooks.Gated) is how long the newest version may
	// wait for the cluster, loaded, while nothing of its db is active,
	// before the node also loads the version before it: another node may
	// have failed the newest, and the cluster needs an older version
	// complete. Default DefaultFallbackAfter.
	FallbackAfter time.Duration
	// RetryMin and RetryMax bound the backoff before a version failed by
	// a transient error (retry.Transient) is loaded again: RetryMin after
	// the first failure, doubling up to RetryMax. Defaults retry.DefaultMin
	// and retry.DefaultMax.
	RetryMin, RetryMax time.Duration
	// MaxParallelLoads bounds the files read at once over all loads;
	// default GOMAXPROCS. Twice as many versions are built at once, the
	// others waiting their turn (buildQueue).
	MaxParallelLoads int
	// Loader tunes loading; its Limit and Log are set by the manager.
	Loader loader.Options
	// Cache bounds each open partition's memory.
	Cache table.CacheOptions
	Hooks Hooks
	// Repair tunes the scrub and the rebuild of corrupt partitions; its
	// Store, Cache, Log and Registerer are the manager's.
	Repair repair.Options
	// ProgressEvery is how often a load under way logs its progress;
	// default DefaultProgressEvery.
	ProgressEvery time.Duration
	// AfterLoad, when set, is called without the lock once each load of
	// a version has ended (served, failed or cancelled): storaged's
	// daemon then gives back what the load touched and serving does not
	// use (package memtrim). It must not block.
	AfterLoad func()
	// Now defaults to time.Now (tests move time).
	Now func() time.Time
}
