package repair

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"spangle/shared/dbver"
	"spangle/shared/source"
	"spangle/shared/wait"
	"spangle/storaged/scrub"
	"spangle/storaged/store"
	"spangle/storaged/table"
)

// DefaultRetry is the first wait before a failed rebuild is tried again
// (Options.Retry); it doubles up to maxRetry.
const DefaultRetry = time.Second

const maxRetry = time.Minute

// DropGrace is how long a replaced (or dropped) partition stays open for
// the requests that acquired its version before the swap.
const DropGrace = time.Minute

// Who found a corrupt partition (Report.By), in logs and metrics.
const (
	FoundByLookup = "lookup"
	FoundByScrub  = "scrub"
)

// Where a partition added or rebuilt came from (Host.Fill), in logs and
// metrics.
const (
	FromPeer   = "peer"
	FromSource = "source"
)

// reportQueue bounds the reports waiting for the Repairer; a lookup never
// waits for room, a later one reports again.
const reportQueue = 64

// Report says that a lookup or the scrub found a bad block in Partition,
// while Part was serving it.
type Report struct {
	dbver.Partition
	Part *table.Partition
	Err  error
	By   string // FoundByLookup or FoundByScrub
}

// Host is what the Repairer needs of the version manager. Each call takes
// the manager's lock for a moment; none is made while the Repairer holds
// its own.
type Host interface {
	// Serving returns partition p as the node serves it now, and the
	// source files its version was built from; nil when the node serves
	// no such partition.
	Serving(p dbver.Partition) (*table.Partition, []source.File)
	// Fill writes partition p into dir, emptied first: a copy from a
	// peer, checked block by block, else a build from files. It returns
	// where the partition came from, FromPeer or FromSource.
	Fill(ctx context.Context, p dbver.Partition, files []source.File, dir string) (string, error)
	// Swap makes part serve partition p in place of old, with one
	// snapshot swap, and reports true; false, changing nothing, when old
	// no longer serves it.
	Swap(p dbver.Partition, old, part *table.Partition) bool
}

// Options configures a Repairer.
type Options struct {
	Store *store.Store
	// Cache bounds a rebuilt partition's memory, as every open one's.
	Cache table.CacheOptions
	// ScrubRate bounds, in bytes per second over the node, how fast the
	// versions reused from the local store after a restart are read back
	// and checked. 0 turns the scrub off: a bad block is then found only
	// when a lookup reads it.
	ScrubRate float64
	// Retry is the first wait before a failed rebuild is tried again;
	// default DefaultRetry.
	Retry time.Duration
	// Log defaults to no logging.
	Log *zap.Logger
	// Registerer receives the metrics; nil registers nowhere.
	Registerer prometheus.Registerer
}

// bad is a partition found corrupt and not yet replaced.
type bad struct {
	part   *table.Partition // the bad copy, serving until replaced
	by     string
	reason string // what was found, then why a rebuild failed
}

// Repairer rebuilds corrupt partitions. It is safe for concurrent use.
type Repairer struct {
	opts    Options
	host    Host
	log     *zap.Logger
	reports chan Report
	scrub   *scrub.Scrubber // nil: no scrub
	metrics metrics

	mu  sync.Mutex               // guards bad
	bad map[dbver.Partition]*bad // the corrupt partitions not yet replaced
}

// New returns a Repairer working on host's partitions; Run starts it.
func New(opts Options, host Host) *Repairer {
	if opts.Retry <= 0 {
		opts.Retry = DefaultRetry
	}
	if opts.Log == nil {
		opts.Log = zap.NewNop()
	}
	r := &Repairer{opts: opts, host: host, log: opts.Log, reports: make(chan Report, reportQueue),
		bad: map[dbver.Partition]*bad{}, metrics: newMetrics(opts.Registerer)}
	r.scrub = scrub.New(opts.ScrubRate, r.metrics.scrubBytes, opts.Log)
	return r
}

// Reports is where lookups report a corrupt partition. A sender must not
// block on it: when it is full, a later lookup reports again.
func (r *Repairer) Reports() chan<- Report { return r.reports }

// Run starts a rebuild for each corrupt partition reported, until ctx
// ends; it returns once the rebuilds it started are over.
func (r *Repairer) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case <-ctx.Done():
			return
		case rep := <-r.reports:
			if b := r.mark(rep); b != nil {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r.repair(ctx, &wg, rep.Partition, b)
				}()
			}
		}
	}
}

// mark records the reported partition bad and returns it, or nil when
// the report is stale or a rebuild of this very copy is under way.
func (r *Repairer) mark(rep Report) *bad {
	if part, _ := r.host.Serving(rep.Partition); part == nil || part != rep.Part {
		return nil
	}
	k := rep.Partition
	r.mu.Lock()
	defer r.mu.Unlock()
	if b := r.bad[k]; b != nil && b.part == rep.Part {
		return nil
	} else if b != nil {
		r.forgetLocked(k, b) // of a copy that no longer serves
	}
	b := &bad{part: rep.Part, by: rep.By, reason: rep.Err.Error()}
	r.bad[k] = b
	r.metrics.corrupt.WithLabelValues(rep.By).Inc()
	r.metrics.repairing.Inc()
	r.log.Error("corrupt block in the local store; rebuilding the partition while the rest serves",
		zap.String("db", rep.DB), zap.String("version", rep.Version), zap.Int("partition", rep.P),
		zap.String("found_by", rep.By), zap.Error(rep.Err))
	return b
}

// errStale: the partition being rebuilt is no longer the one served (its
// version or the partition went, or it was replaced).
var errStale = errors.New("repair: partition no longer served")

// repair rebuilds a bad partition until it is replaced, its version or
// partition is no longer served, or ctx ends. wg is Run's: the bad copy's
// closing joins it.
func (r *Repairer) repair(ctx context.Context, wg *sync.WaitGroup, k dbver.Partition, b *bad) {
	pause := r.opts.Retry
	for {
		from, err := r.rebuild(ctx, wg, k, b)
		if err == nil {
			r.metrics.repairs.WithLabelValues(from).Inc()
			r.log.Info("corrupt partition rebuilt and swapped in", zap.String("db", k.DB), zap.String("version", k.Version),
				zap.Int("partition", k.P), zap.String("from", from))
			return
		}
		if errors.Is(err, errStale) || ctx.Err() != nil {
			r.forget(k, b)
			return
		}
		r.metrics.repairs.WithLabelValues("error").Inc()
		r.log.Error("rebuilding a corrupt partition failed; trying again", zap.String("db", k.DB), zap.String("version", k.Version),
			zap.Int("partition", k.P), zap.Duration("in", pause), zap.Error(err))
		r.mu.Lock()
		b.reason = "rebuild failed: " + err.Error()
		r.mu.Unlock()
		if wait.Sleep(ctx, pause) != nil {
			r.forget(k, b)
			return
		}
		pause = min(2*pause, maxRetry)
	}
}

// rebuild writes a new copy of the partition beside the bad one, moves
// it in its place, and has the host swap it into the served version.
func (r *Repairer) rebuild(ctx context.Context, wg *sync.WaitGroup, k dbver.Partition, b *bad) (string, error) {
	part, files := r.host.Serving(k)
	if part == nil || part != b.part {
		return "", errStale
	}
	dir := r.opts.Store.PartitionDir(k)
	fresh, old := dir+".new", dir+".bad"
	from, err := r.host.Fill(ctx, k, files, fresh)
	if err != nil {
		return "", err
	}
	// The bad copy's files stay open (and readable) under their new
	// name until it is closed. A crash between the renames leaves no
	// partition dir: the version does not open after a restart and is
	// loaded again.
	if err := os.RemoveAll(old); err != nil {
		return "", fmt.Errorf("repair: %w", err)
	}
	if err := os.Rename(dir, old); err != nil {
		os.RemoveAll(fresh)
		return "", fmt.Errorf("repair: setting the corrupt copy aside: %w", err)
	}
	if err := os.Rename(fresh, dir); err != nil {
		os.Rename(old, dir)
		return "", fmt.Errorf("repair: putting the rebuilt copy in place: %w", err)
	}
	np, err := table.OpenPartition(dir, r.opts.Cache)
	if err != nil {
		return "", fmt.Errorf("repair: opening the rebuilt partition: %w", err)
	}
	if !r.host.Swap(k, b.part, np) {
		np.Close()
		return "", errStale
	}
	r.forget(k, b)
	wg.Add(1)
	go func() {
		defer wg.Done()
		wait.Sleep(ctx, DropGrace) // requests that acquired the old copy finish
		b.part.Close()
		os.RemoveAll(old)
	}()
	return from, nil
}

// forget removes b from the bad partitions, if it is there.
func (r *Repairer) forget(k dbver.Partition, b *bad) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bad[k] == b {
		r.forgetLocked(k, b)
	}
}

func (r *Repairer) forgetLocked(k dbver.Partition, b *bad) {
	delete(r.bad, k)
	r.metrics.repairing.Dec()
}

// Forget drops what is known of v's bad partitions: the version was
// removed, or its whole copy replaced. A rebuild under way finds its
// partition stale and stops.
func (r *Repairer) Forget(v dbver.Version) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, b := range r.bad {
		if k.Of() == v {
			r.forgetLocked(k, b)
		}
	}
}

// Bad reports whether partition p was found corrupt and is not replaced
// yet: it is not offered to peers.
func (r *Repairer) Bad(p dbver.Partition) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bad[p] != nil
}

// Corrupt returns the bad partitions of v, ascending, and a reason
// saying what was found; nil and "" when there are none.
func (r *Repairer) Corrupt(v dbver.Version) ([]int, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ps []int
	for k := range r.bad {
		if k.Of() == v {
			ps = append(ps, k.P)
		}
	}
	if len(ps) == 0 {
		return nil, ""
	}
	sort.Ints(ps)
	var why []string
	for _, p := range ps {
		b := r.bad[v.Partition(p)]
		why = append(why, "partition "+strconv.Itoa(p)+" corrupt (found by "+b.by+"): "+b.reason)
	}
	return slices.Clip(ps), strings.Join(why, "; ") + "; rebuilding"
}

// Reused is called once a version reused from the local store serves
// partitions held: it deletes what an interrupted rebuild left beside
// them. Scrub then checks them.
func (r *Repairer) Reused(v dbver.Version, held []int) {
	for _, p := range held {
		dir := r.opts.Store.PartitionDir(v.Partition(p))
		os.RemoveAll(dir + ".new")
		os.RemoveAll(dir + ".bad")
	}
}

// Scrub reads the partitions held of a version reused from the local
// store back (storaged/scrub) and reports each corrupt one for a rebuild;
// it returns when done, at once when the scrub is off, or when ctx ends.
func (r *Repairer) Scrub(ctx context.Context, v dbver.Version, held []int) {
	r.scrub.Scrub(ctx, scrub.Target{
		DB: v.DB, Version: v.Version, Held: held,
		Dir: func(p int) string { return r.opts.Store.PartitionDir(v.Partition(p)) },
		Serving: func(p int) *table.Partition {
			part, _ := r.host.Serving(v.Partition(p))
			return part
		},
		Corrupt: func(ctx context.Context, p int, part *table.Partition, err error) error {
			select {
			case r.reports <- Report{Partition: v.Partition(p), Part: part, Err: err, By: FoundByScrub}:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		},
	})
}
