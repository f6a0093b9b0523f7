package builder

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"spangle/shared/dbver"
	"spangle/shared/parquetkv"
	"spangle/shared/source"
	"spangle/storaged/loader"
	"spangle/storaged/repair"
	"spangle/storaged/store"
	"spangle/storaged/table"
)

// ErrNoPeer: no other node serves the partition to copy it from (what
// Options.CopyPartition returns then, wrapped).
var ErrNoPeer = errors.New("versions: no peer serves the partition")

// Options configures a Builder.
type Options struct {
	Source source.Source
	Store  *store.Store
	// Loader tunes loading; Limit and Log should be set.
	Loader loader.Options
	// Format returns the _FORMAT a load of db's Parquet versions follows.
	Format func(db string) parquetkv.Format
	// Cache bounds each open partition's memory.
	Cache table.CacheOptions
	// CopyPartition copies partition p from a peer that
	// serves it into dir, which it creates; nil, or an error (wrapping
	// ErrNoPeer when no peer serves it), builds it from the source.
	CopyPartition func(ctx context.Context, p dbver.Partition, dir string) error
	// Log defaults to no logging.
	Log *zap.Logger
	// Registerer receives the metrics; nil registers nowhere.
	Registerer prometheus.Registerer
}

// Builder builds and opens the local copies of versions.
type Builder struct {
	opts       Options
	log        *zap.Logger
	records    prometheus.Counter
	partitions *prometheus.CounterVec
}

// New returns a Builder.
func New(opts Options) *Builder {
	if opts.Log == nil {
		opts.Log = zap.NewNop()
	}
	b := &Builder{opts: opts, log: opts.Log,
		records: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "spangle_storaged_records_loaded_total",
			Help: "Records read from source files.",
		}),
		partitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "spangle_storaged_partitions_loaded_total",
			Help: "Partitions of versions loaded, by where they came from: copied from a peer that served them, or built from the source.",
		}, []string{"from"}),
	}
	if opts.Registerer != nil {
		opts.Registerer.MustRegister(b.records, b.partitions)
	}
	return b
}

// Opened is a version's held partitions, open.
type Opened struct {
	Parts   []*table.Partition // by partition; nil when not held
	N       int                // the version's partition count
	Created time.Time          // when the source version was written
	// ContentType, when set, is the Content-Type of the version's values
	// (a Parquet db's JSON, or its _FORMAT's content_type).
	ContentType string
	// Pending, for a version built now (nil when reused), is what
	// remains to make it durable: Sync, then Complete.
	Pending *Pending
}

// Pending is a version built and opened whose files may not be on disk
// yet, nor its manifest complete.
type Pending struct {
	Result   loader.Result
	Manifest store.Manifest
}

// LoaderOptions returns the options a load of db's versions uses: the
// builder's, with db's _FORMAT for Parquet.
func (b *Builder) LoaderOptions(db string) loader.Options {
	lopts := b.opts.Loader
	lopts.Formats = b.Formats(db)
	return lopts
}

// Formats returns the input formats of db's versions: the loader's, with
// a Parquet format mapping columns (and counting partitions) as db's
// _FORMAT says.
func (b *Builder) Formats(db string) []loader.Format {
	return loader.WithParquet(b.opts.Loader.Formats, b.opts.Format(db))
}

// Build returns the opened version, reusing a complete local copy that
// matches the source (Pending nil), else loading it: each partition that
// peers already serve is copied from one of them (copyFromPeers), the
// rest is built from the source, with prog counting what it reads.
// copyable, when not nil, says which partitions may be copied; the others
// are built from the source whoever serves them.
func (b *Builder) Build(ctx context.Context, db, name string, files []source.File, held []int, copyable func(p int) bool, prog *loader.Progress) (Opened, error) {
	st := b.opts.Store
	lopts := b.LoaderOptions(db)
	layout, err := loader.Detect(files, lopts.Formats)
	if err != nil {
		return Opened{}, fmt.Errorf("versions: %s/%s: %w", db, name, err)
	}
	n, ctype := layout.Partitions, layout.ContentType
	if man, err := st.ReadManifest(dbver.Of(db, name)); err == nil && man.Matches(files, held) && man.NumPartitions == n {
		parts, err := b.Open(func(p int) string { return st.PartitionDir(dbver.Of(db, name).Partition(p)) }, n, held)
		if err == nil {
			// Its values were built as the marker said then.
			return Opened{Parts: parts, N: n, Created: man.Created, ContentType: man.ContentType}, nil
		}
		b.log.Warn("local copy unreadable; loading again", zap.String("db", db), zap.String("version", name), zap.Error(err))
	}
	// Anything else there is half-written or stale.
	if err := st.Remove(dbver.Of(db, name)); err != nil {
		return Opened{}, LocalErr(err)
	}
	created := newest(files)
	man := store.Manifest{DB: db, Version: name, NumPartitions: n, Partitions: held, Files: files, Created: created, ContentType: ctype}
	if err := st.WriteManifest(man); err != nil {
		return Opened{}, LocalErr(err)
	}
	rest, err := b.copyFromPeers(ctx, db, name, held, copyable)
	if err != nil {
		return Opened{}, err
	}
	var res loader.Result
	if len(rest) > 0 {
		res, err = loader.Load(ctx, loader.Request{
			Source: b.opts.Source, DB: db, Version: name, Files: files, Held: rest,
			Dir:      func(p int) string { return st.PartitionDir(dbver.Of(db, name).Partition(p)) },
			Progress: prog,
		}, lopts)
		if err != nil {
			return Opened{}, err
		}
		b.records.Add(float64(res.Records))
	}
	parts, err := b.openWith(func(p int) (*table.Partition, error) {
		return res.OpenPartition(p, st.PartitionDir(dbver.Of(db, name).Partition(p)), b.opts.Cache)
	}, n, held)
	if err != nil {
		return Opened{}, LocalErr(err)
	}
	return Opened{Parts: parts, N: n, Created: created, ContentType: ctype, Pending: &Pending{Result: res, Manifest: man}}, nil
}

// newest is the latest modification time of files: when the version was
// written.
func newest(files []source.File) time.Time {
	var created time.Time
	for _, f := range files {
		if f.ModTime.After(created) {
			created = f.ModTime
		}
	}
	return created
}

// LocalErr marks a failure of the local store met by a build (removing
// what was there, writing the manifest, opening what was just written)
// as loader.ErrLocal: a disk error, not bad data (retry.Transient).
func LocalErr(err error) error {
	return fmt.Errorf("versions: %w: %w", loader.ErrLocal, err)
}

// Open opens the held partitions (of n) in dir(p), two at a time per CPU
// (an open reads each table's index and filter).
func (b *Builder) Open(dir func(p int) string, n int, held []int) ([]*table.Partition, error) {
	return b.openWith(func(p int) (*table.Partition, error) { return table.OpenPartition(dir(p), b.opts.Cache) }, n, held)
}

// openWith is Open with each partition opened by open.
func (b *Builder) openWith(open func(p int) (*table.Partition, error), n int, held []int) ([]*table.Partition, error) {
	parts := make([]*table.Partition, n)
	errs := make([]error, n)
	sem := make(chan struct{}, 2*runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for _, p := range held {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			parts[p], errs[p] = open(p)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, o := range parts {
			if o != nil {
				o.Close()
			}
		}
		return nil, err
	}
	return parts, nil
}

// copyFromPeers is the peers-first half of a load in cluster mode: each
// of held that another node already serves (a version pinned again after
// this node deleted it, or one this node lost with its disk) is copied
// from a peer and checked block by block, which reads nothing from the
// source. It returns the partitions left to build from the source: all
// of held without Options.CopyPartition, else those copyable (when not
// nil) leaves out and those no peer gave.
func (b *Builder) copyFromPeers(ctx context.Context, db, name string, held []int, copyable func(p int) bool) (rest []int, err error) {
	cp := b.opts.CopyPartition
	if cp == nil {
		return held, nil
	}
	copied := 0
	for _, p := range held {
		if copyable != nil && !copyable(p) {
			rest = append(rest, p)
			continue
		}
		part := dbver.Of(db, name).Partition(p)
		dir := b.opts.Store.PartitionDir(part)
		err := cp(ctx, part, dir)
		if err == nil {
			err = table.VerifyPartition(ctx, dir, nil)
		}
		if err == nil {
			copied++
			b.partitions.WithLabelValues(repair.FromPeer).Inc()
			continue
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !errors.Is(err, ErrNoPeer) {
			b.log.Info("no good copy of the partition from a peer; building it from the source", zap.String("db", db),
				zap.String("version", name), zap.Int("partition", p), zap.Error(err))
		}
		if err := os.RemoveAll(dir); err != nil {
			return nil, LocalErr(err)
		}
		rest = append(rest, p)
	}
	b.partitions.WithLabelValues(repair.FromSource).Add(float64(len(rest)))
	if copied > 0 {
		b.log.Info("partitions copied from peers", zap.String("db", db), zap.String("version", name),
			zap.Int("copied", copied), zap.Int("from_source", len(rest)))
	}
	return rest, nil
}
