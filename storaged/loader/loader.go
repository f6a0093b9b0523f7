package loader

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"spangle/shared/partitioner"
	"spangle/shared/source"
	"spangle/storaged/internal/fsync"
	"spangle/storaged/table"
)

// ErrNoFiles is returned for a version without data files.
var ErrNoFiles = errors.New("loader: version has no data files")

// ErrLocal is returned when writing the local store failed (a disk error,
// a full disk, a directory that vanished; the versions package uses it
// too for the store's manifest and for opening what was just written):
// the source's data may be fine,
// and trying again later may work. Errors from reading the source carry
// the source's own sentinels (source.ErrUnavailable, source.ErrChanged)
// and errors in the data seqfile's (seqfile.ErrCorrupt and the rest).
var ErrLocal = errors.New("loader: writing the local store failed")

// ErrWrongPartition is returned when a file that holds one partition
// (a Sparkey log, by its name) holds a key of another: bad data.
var ErrWrongPartition = errors.New("loader: key in the wrong partition")

// localErr marks err, from the table package, as ErrLocal.
func localErr(err error) error { return fmt.Errorf("%w: %w", ErrLocal, err) }

// DefaultSpillBytes is Options.SpillBytes' default: what a load holds in
// memory of the records of files that are not pre-sharded.
const DefaultSpillBytes = 16 << 20

// Options tunes loading. Zero values select the defaults noted.
type Options struct {
	// Parallel is how many files of one version are read at once; default
	// GOMAXPROCS.
	Parallel int
	// Limit, when set, is a semaphore shared by all loads of a node
	// (max_parallel_loads): a file is read only while holding a slot.
	Limit chan struct{}
	// SpillBytes is how many bytes of records the general path buffers
	// before writing them sorted to spill files, merged into one run per
	// partition at the end; default DefaultSpillBytes.
	SpillBytes int64
	// Build tunes the written tables.
	Build table.BuildOptions
	// Log receives progress; default no logging.
	Log *zap.Logger
	// Formats are the input formats known; default DefaultFormats().
	Formats []Format

	// runBytes bounds a fast path run's records (tests); default
	// maxRunBytes.
	runBytes int
}

// Request names what to load.
type Request struct {
	Source      source.Source
	DB, Version string
	// Files are the version's data files, all of one format, which says
	// N (see Detect).
	Files []source.File
	// Held lists the partitions to build; nil means all N.
	Held []int
	// Dir returns the directory of partition p's database.
	Dir func(p int) string
	// Progress, when set, is updated as the load goes (see Progress).
	Progress *Progress
}

// Result says what a load did.
type Result struct {
	Records int64
	// Bytes is how many bytes of source files were read.
	Bytes int64
	// FastFiles counts units (files, or Sparkey pairs) loaded wholly by
	// the fast path.
	FastFiles int
	// Runs counts the sorted runs written.
	Runs int64
	// Duplicates counts the records left out because an earlier or later
	// record held the same key (Layout.Duplicates first or last).
	Duplicates int64
	// InPlace counts units served in place (Sparkey pairs of uncompressed
	// logs), copied and checked, not read into tables.
	InPlace int

	built []*table.PartitionBuilder
	// byPart is built by partition; nil where this load built none.
	byPart []*table.PartitionBuilder
	placed []string // files of units served in place, to sync
	noSync bool
}

// OpenPartition opens partition p, in dir, for lookups: one this load
// built from what its table writers kept (table.PartitionBuilder.Open,
// which reads no table's index or filter back), any other from its files
// (table.OpenPartition). Call it once per partition.
func (r Result) OpenPartition(p int, dir string, o table.CacheOptions) (*table.Partition, error) {
	if p >= 0 && p < len(r.byPart) && r.byPart[p] != nil {
		return r.byPart[p].Open(o)
	}
	return table.OpenPartition(dir, o)
}

// Sync returns once every partition the load built is on disk (see
// table.PartitionBuilder.Sync); the partitions may be opened and served
// before.
func (r Result) Sync() error {
	errs := make([]error, len(r.built)+1)
	var wg sync.WaitGroup
	for i, b := range r.built {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = b.Sync()
		}()
	}
	if len(r.placed) > 0 && !r.noSync {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[len(r.built)] = syncPaths(r.placed)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return localErr(err)
	}
	return nil
}

// loadState is one version's load in progress.
type loadState struct {
	ctx      context.Context
	req      Request
	opts     Options
	layout   Layout
	in       Input
	n        int
	part     partitioner.Of            // of n
	builders []*table.PartitionBuilder // by partition; nil if not held
	buffers  []*buffer                 // by partition; nil if not held
	buffered atomic.Int64              // bytes in buffers
	spillMu  sync.Mutex                // one spill at a time; guards spills
	// dedup is set when the layout resolves duplicate keys: records carry
	// their ordinals, and equal keys meet where they are merged.
	dedup bool
	// spills are each partition's spill files (spill.go), and spillSeq
	// numbers them.
	spills   [][]string
	spillSeq []int
	// claimed marks the partitions a unit streams a run into, and kept
	// holds those runs until the end (dedup only; fast.go).
	claimed []atomic.Bool
	keptMu  sync.Mutex
	kept    []*keptRun
	// pendingFree holds the pending buffers units let go of, for the
	// units after them (dedup only; fast.go).
	pendingFree sync.Pool

	placedMu sync.Mutex
	placed   []string
	inPlace  atomic.Int64

	records    atomic.Int64
	runs       atomic.Int64
	fast       atomic.Int64
	duplicates atomic.Int64
}

// Load builds the held partitions of a version. On success every held
// partition is a finished database that may be opened, not yet synced to
// disk (Result.Sync); on error the caller discards the partially written
// directories.
func Load(ctx context.Context, req Request, opts Options) (Result, error) {
	if len(req.Files) == 0 {
		return Result{}, fmt.Errorf("%w: %s/%s", ErrNoFiles, req.DB, req.Version)
	}
	layout, err := Detect(req.Files, opts.Formats)
	if err != nil {
		return Result{}, fmt.Errorf("%w (%s/%s)", err, req.DB, req.Version)
	}
	n := layout.Partitions
	if n < 1 || n > 1<<31 {
		return Result{}, fmt.Errorf("loader: %s/%s: %d partitions", req.DB, req.Version, n)
	}
	if opts.Parallel <= 0 {
		opts.Parallel = runtime.GOMAXPROCS(0)
	}
	if opts.SpillBytes <= 0 {
		opts.SpillBytes = DefaultSpillBytes
	}
	if opts.runBytes <= 0 {
		opts.runBytes = maxRunBytes
	}
	if opts.Log == nil {
		opts.Log = zap.NewNop()
	}
	if req.Progress == nil {
		req.Progress = &Progress{}
	}
	held := req.Held
	if held == nil {
		held = make([]int, n)
		for i := range held {
			held[i] = i
		}
	}
	st := &loadState{ctx: ctx, req: req, opts: opts, n: n, part: partitioner.New(n), layout: layout,
		in: Input{src: req.Source, db: req.DB, version: req.Version, read: &req.Progress.bytesRead,
			seq: newSeqBuffers(opts.Parallel)},
		builders: make([]*table.PartitionBuilder, n), buffers: make([]*buffer, n),
		dedup: layout.Duplicates != DuplicatesAny, spills: make([][]string, n), spillSeq: make([]int, n),
		claimed: make([]atomic.Bool, n), kept: make([]*keptRun, n)}
	defer st.abortKept()
	seen := make([]bool, n)
	var create []int
	for _, p := range held {
		if p < 0 || p >= n {
			return Result{}, fmt.Errorf("loader: partition %d out of range [0,%d)", p, n)
		}
		if !seen[p] {
			seen[p] = true
			create = append(create, p)
		}
	}
	// Creating a directory (and at the end a partition's two files) costs
	// the file system an inode each, which on a busy ext4 is a scan of its
	// bitmaps: done on every CPU, not one after another.
	if err := eachParallel(len(create), func(i int) error {
		p := create[i]
		b, err := table.CreatePartition(req.Dir(p), opts.Build)
		if err != nil {
			return localErr(err)
		}
		st.builders[p] = b
		st.buffers[p] = &buffer{ords: st.dedup}
		return nil
	}); err != nil {
		return Result{}, err
	}
	// Progress counts the units to be read (those of a partition not held
	// are not) and their bytes.
	var units int
	var total int64
	for _, u := range layout.Units {
		if u.Partition >= 0 && st.builders[u.Partition] == nil {
			continue
		}
		units++
		for _, f := range u.Files {
			total += f.Size
		}
	}
	req.Progress.start(time.Now(), units, total)

	if err := st.readFiles(); err != nil {
		return Result{}, err
	}
	if err := st.settleKept(); err != nil {
		return Result{}, err
	}
	if err := st.spill(true); err != nil {
		return Result{}, err
	}
	res := Result{Records: st.records.Load(), Bytes: req.Progress.bytesRead.Load(),
		FastFiles: int(st.fast.Load()), Runs: st.runs.Load(), Duplicates: st.duplicates.Load(),
		InPlace: int(st.inPlace.Load()), placed: st.placed, noSync: opts.Build.NoSync}
	res.byPart = st.builders
	for _, b := range st.builders {
		if b != nil {
			res.built = append(res.built, b)
		}
	}
	if err := eachParallel(len(res.built), func(i int) error {
		if err := res.built[i].Finish(); err != nil {
			return localErr(err)
		}
		return nil
	}); err != nil {
		return Result{}, err
	}
	return res, nil
}

// eachParallel calls fn(i) for i in [0,n), GOMAXPROCS at a time, and
// returns every error. It holds no load slot (Options.Limit): it is for
// a load's own bookkeeping, not for reading files.
func eachParallel(n int, fn func(i int) error) error {
	if n == 1 {
		return fn(0)
	}
	errs := make([]error, n)
	next := atomic.Int64{}
	var wg sync.WaitGroup
	for w := min(n, runtime.GOMAXPROCS(0)); w > 0; w-- {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				errs[i] = fn(i)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// readFiles reads every unit, opts.Parallel at a time, and returns the
// first error (the other readers stop soon after). A unit that holds one
// partition only is skipped when that partition is not held.
func (st *loadState) readFiles() error {
	ctx, cancel := context.WithCancel(st.ctx)
	defer cancel()
	files := make(chan int)
	errc := make(chan error, st.opts.Parallel)
	var wg sync.WaitGroup
	for i := 0; i < st.opts.Parallel; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range files {
				if err := st.readFileLimited(ctx, i); err != nil {
					errc <- err
					cancel()
					return
				}
			}
		}()
	}
	var err error
feed:
	for i, f := range st.layout.Units {
		if f.Partition >= 0 && st.builders[f.Partition] == nil {
			continue
		}
		select {
		case files <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(files)
	wg.Wait()
	select {
	case err = <-errc:
	default:
		err = st.ctx.Err()
	}
	if err != nil {
		return err
	}
	return nil
}

func (st *loadState) readFileLimited(ctx context.Context, unit int) error {
	if st.opts.Limit != nil {
		select {
		case st.opts.Limit <- struct{}{}:
			defer func() { <-st.opts.Limit }()
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return st.readFile(ctx, unit)
}

// readFile loads one unit, the unit-th of the layout: the fast path while
// it holds (fast.go), then the general path.
func (st *loadState) readFile(ctx context.Context, unit int) error {
	u := st.layout.Units[unit]
	var r Records
	var err error
	if pl, ok := st.layout.Format.(placer); ok && u.Partition >= 0 {
		r, err = st.place(ctx, pl, unit)
		if err != nil || r == nil {
			return err
		}
	} else if r, err = st.layout.Format.Open(ctx, u, st.in); err != nil {
		return err
	}
	defer r.Close()
	prog := st.req.Progress
	f := fastPath{st: st, unit: unit, p: -1}
	var count int64
	defer func() {
		f.abort()
		st.records.Add(count)
		prog.records.Add(count % recordBatch)
	}()
	fast := true
	spread := false // some record went to a buffer
	for r.Next() {
		count++
		if count%recordBatch == 0 {
			prog.records.Add(recordBatch)
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
		key, val := r.Key(), r.Value()
		p := st.part.Partition(key)
		if u.Partition >= 0 && p != u.Partition {
			return fmt.Errorf("%w: %s: the key at byte %d belongs to partition %d of %d, the file is of partition %d",
				ErrWrongPartition, st.in.Path(u.Files[0]), r.Offset(), p, st.n, u.Partition)
		}
		if fast {
			ok, err := f.add(p, key, val, ordinal(unit, count))
			if err != nil {
				return err
			}
			if ok {
				continue
			}
			// The unit is not (or no longer) one sorted partition: what
			// was streamed stays a run; the rest goes the general way.
			fast = false
			if _, err := f.stop(false); err != nil {
				return err
			}
		}
		if st.buffers[p] != nil {
			spread = true
			if err := st.bufferRecord(p, key, val, ordinal(unit, count)); err != nil {
				return err
			}
		}
	}
	if err := r.Err(); err != nil {
		return fmt.Errorf("loader: %w", err)
	}
	if fast {
		ran, err := f.stop(true)
		if err != nil {
			return err
		}
		if ran {
			st.fast.Add(1)
			prog.presharded.Add(1)
		} else if count > 0 && st.buffers[f.p] != nil {
			spread = true
		}
	}
	if spread {
		prog.spread.Add(1)
	}
	prog.filesDone.Add(1)
	return nil
}

// parallel calls fn(ctx, i) for i in [0,n), opts.Parallel at a time and
// each holding a slot of opts.Limit, and returns the first error.
func (st *loadState) parallel(n int, fn func(ctx context.Context, i int) error) error {
	if n == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(st.ctx)
	defer cancel()
	sem := make(chan struct{}, st.opts.Parallel)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if st.opts.Limit != nil {
				select {
				case st.opts.Limit <- struct{}{}:
					defer func() { <-st.opts.Limit }()
				case <-ctx.Done():
					errs[i] = ctx.Err()
					return
				}
			}
			if errs[i] = fn(ctx, i); errs[i] != nil {
				cancel()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (st *loadState) closeRun(run **table.RunWriter) error {
	w := *run
	*run = nil
	if w == nil {
		return nil
	}
	if w.Len() > 0 {
		st.runs.Add(1)
	}
	if err := w.Close(); err != nil {
		return localErr(err)
	}
	return nil
}

// spill sorts the buffered records of every partition and writes each as a
// run, partitions in parallel. Unless final, it does nothing when another
// spill already brought the buffers under budget.
func (st *loadState) spill(final bool) error {
	st.spillMu.Lock()
	defer st.spillMu.Unlock()
	if !final && st.buffered.Load() <= st.opts.SpillBytes {
		return nil
	}
	taken := make([]*buffer, st.n)
	var size int64
	for p, b := range st.buffers {
		if b != nil {
			taken[p] = b.take()
			size += taken[p].bytes
		}
	}
	defer st.buffered.Add(-size)
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	errs := make([]error, st.n)
	var wg sync.WaitGroup
	for p, b := range taken {
		if b == nil || (len(b.entries) == 0 && (!final || len(st.spills[p]) == 0)) {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			switch {
			case !final:
				errs[p] = st.writeSpill(p, b)
			case len(st.spills[p]) == 0:
				errs[p] = st.writeRun(p, b)
			default:
				errs[p] = st.mergeSpills(p, b)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// writeRun writes b as partition p's one run: the partition spilled
// nothing before.
func (st *loadState) writeRun(p int, b *buffer) error {
	b.sort()
	return st.buildRun(p, func(out func(k, v []byte, ord uint64) error) error { return st.drain(b, out) })
}

// buildRun writes one run of partition p from the records fill passes to
// out, in key order.
func (st *loadState) buildRun(p int, fill func(out func(k, v []byte, ord uint64) error) error) error {
	w, err := st.builders[p].NewRun()
	if err != nil {
		return localErr(err)
	}
	if err := fill(func(k, v []byte, _ uint64) error {
		if err := w.Append(k, v); err != nil {
			return localErr(err)
		}
		return nil
	}); err != nil {
		w.Abort()
		return err
	}
	st.runs.Add(1)
	if err := w.Close(); err != nil {
		return localErr(err)
	}
	return nil
}

// place serves unit in place when its format can: it returns nil Records
// when it did, else the unit's Records to read.
func (st *loadState) place(ctx context.Context, pl placer, unit int) (Records, error) {
	u := st.layout.Units[unit]
	files, keys, r, err := pl.Place(ctx, u, st.in, st.req.Dir(u.Partition), fmt.Sprintf("sparkey-%05d", unit), st.n,
		func(key []byte, off int64) error {
			if p := partitioner.Partition(key, st.n); p != u.Partition {
				return fmt.Errorf("%w: %s: the key at byte %d belongs to partition %d of %d, the file is of partition %d",
					ErrWrongPartition, st.in.Path(u.Files[0]), off, p, st.n, u.Partition)
			}
			return nil
		})
	if err != nil || r != nil {
		return r, err
	}
	st.placedMu.Lock()
	st.placed = append(st.placed, files...)
	st.placedMu.Unlock()
	st.records.Add(keys)
	st.inPlace.Add(1)
	prog := st.req.Progress
	prog.records.Add(keys)
	prog.presharded.Add(1)
	prog.filesDone.Add(1)
	return nil, nil
}

// syncPaths syncs files and their directories to disk.
func syncPaths(paths []string) error {
	dirs := map[string]bool{}
	var errs []error
	for _, p := range paths {
		errs = append(errs, fsync.Path(p))
		dirs[filepath.Dir(p)] = true
	}
	for d := range dirs {
		errs = append(errs, fsync.Path(d))
	}
	return errors.Join(errs...)
}
