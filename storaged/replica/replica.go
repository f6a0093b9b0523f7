package replica

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"go.uber.org/zap"

	"spangle/shared/dbver"
	"spangle/shared/source"
	"spangle/storaged/repair"
	"spangle/storaged/store"
	"spangle/storaged/table"
)

// ErrNotServed: the node serves no such version (or it went meanwhile).
var ErrNotServed = errors.New("replica: version not served")

// Served is a version the node serves, as Host.Served finds it.
type Served struct {
	// Token names this very copy of the version: a version removed and
	// loaded again under the same name has another, and Host.Swap
	// refuses a stale one.
	Token any
	// Part is partition p as served now; nil when the node does not
	// hold it.
	Part  *table.Partition
	Files []source.File
	N     int // the version's partition count
}

// Host is what a Set needs of the version manager.
type Host interface {
	// Served returns p's version as the node serves it, with partition
	// p.P (which may be out of range: Part nil); ok false when it serves
	// no such version.
	Served(p dbver.Partition) (s Served, ok bool)
	// Fill writes partition p into dir, emptied first:
	// a copy by fill (from a peer), checked block by block, else, when
	// fill is nil or fails, a build from files. It returns where the
	// partition came from, repair.FromPeer or repair.FromSource.
	Fill(ctx context.Context, p dbver.Partition, files []source.File, dir string, fill func(ctx context.Context, dir string) error) (string, error)
	// Swap makes part serve partition p of the copy token names in place
	// of old (nil: not held; part nil: no longer held), with one snapshot
	// swap, and records the partitions held in the local manifest.
	// served is false when that copy no longer serves; swapped false when
	// partition p is no longer old. Nothing changes unless both are true.
	Swap(token any, p int, old, part *table.Partition) (served, swapped bool)
	// Ready announces partition p (of a version of n partitions) as
	// servable (the manager's Hooks.PartitionReady).
	Ready(p dbver.Partition, n int)
}

// Set adds and drops the partitions of served versions. It is safe for
// concurrent use.
type Set struct {
	host  Host
	store *store.Store
	cache table.CacheOptions
	log   *zap.Logger
}

// New returns a Set over host's versions, whose partitions live in st
// and open with cache.
func New(host Host, st *store.Store, cache table.CacheOptions, log *zap.Logger) *Set {
	if log == nil {
		log = zap.NewNop()
	}
	return &Set{host: host, store: st, cache: cache, log: log}
}

// Add makes this node serve partition p of a version it already serves.
// fill, if not nil, writes the partition's database into an empty
// directory (a copy from a peer); if it is nil or fails, the partition is
// built from the source. The partition is then served beside the others
// and announced through Host.Ready. Errors: ErrNotServed.
func (s *Set) Add(ctx context.Context, p dbver.Partition, fill func(ctx context.Context, dir string) error) error {
	sv, ok := s.host.Served(p)
	switch {
	case !ok:
		return fmt.Errorf("%w: %s", ErrNotServed, p.Of())
	case p.P < 0 || p.P >= sv.N:
		return fmt.Errorf("replica: %s has no partition %d", p.Of(), p.P)
	case sv.Part != nil:
		return nil
	}
	dir := s.store.PartitionDir(p)
	from, err := s.host.Fill(ctx, p, sv.Files, dir, fill)
	if err != nil {
		return err
	}
	part, err := table.OpenPartition(dir, s.cache)
	if err != nil {
		os.RemoveAll(dir)
		return fmt.Errorf("replica: %w", err)
	}
	served, swapped := s.host.Swap(sv.Token, p.P, nil, part)
	switch {
	case !served:
		part.Close()
		return fmt.Errorf("%w: %s went while partition %d was fetched", ErrNotServed, p.Of(), p.P)
	case !swapped: // added meanwhile
		part.Close()
		return nil
	}
	s.log.Info("partition added", zap.String("db", p.DB), zap.String("version", p.Version), zap.Int("partition", p.P), zap.String("from", from))
	s.host.Ready(p, sv.N)
	return nil
}

// Drop stops serving partition p, which the coordinator
// gave to other nodes. Requests already under way finish: the partition
// is closed and deleted repair.DropGrace later.
func (s *Set) Drop(_ context.Context, p dbver.Partition) error {
	var sv Served
	for {
		var ok bool
		if sv, ok = s.host.Served(p); !ok || sv.Part == nil {
			return nil
		}
		served, swapped := s.host.Swap(sv.Token, p.P, sv.Part, nil)
		if swapped {
			break
		}
		if !served {
			return nil
		}
		// A rebuilt copy was swapped in meanwhile: drop that one.
	}
	dir := s.store.PartitionDir(p)
	part := sv.Part
	time.AfterFunc(repair.DropGrace, func() {
		part.Close()
		os.RemoveAll(dir)
	})
	s.log.Info("partition dropped", zap.String("db", p.DB), zap.String("version", p.Version), zap.Int("partition", p.P))
	return nil
}
