package dataset

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"spangle/shared/partitioner"
	"spangle/shared/seqfile"
	"spangle/shared/sparkey"
	"spangle/shared/versiontest"
)

// Names of the db and version the dataset holds.
const (
	DB      = "bench"
	Version = "1"
)

// KeyDigits is the zero-padded width of a key's number, so that numeric
// order is key order.
const KeyDigits = 10

// Options describes a dataset. Zero values select the defaults noted.
type Options struct {
	// DB is the db the dataset is written as; default DB. A cluster of
	// many dbs is many datasets under one root.
	DB string
	// Version is the version's name; default Version.
	Version string
	// Keys is the record count; default 1,000,000.
	Keys int
	// Files is the data file (and partition) count; default 8.
	Files int
	// ValueSize is each value's length in bytes; default 100.
	ValueSize int
	// Compression of the files; default seqfile.None.
	Compression seqfile.Compression
	// Codec when compressed; default seqfile.SnappyCodec.
	Codec string
	// Format is FormatSequenceFile (the default) or FormatSparkey: a
	// Sparkey pair part-NNNNN.spl and .spi.sz per partition, the log in
	// Snappy blocks of 4 KiB, as sequins jobs write them (Compression
	// and Codec do not apply); or FormatParquet (columns key and value)
	// or FormatParquetFeatures (a key and eleven feature columns, served
	// as JSON by the _FORMAT written beside the version), Snappy, as
	// Spark writes them.
	Format string
	// SparkeyPlain writes FormatSparkey's logs uncompressed (which
	// storaged serves in place) instead of in Snappy blocks.
	SparkeyPlain bool
}

// Input formats of a dataset.
const (
	FormatSequenceFile = ""
	FormatSparkey      = "sparkey"
	// FormatParquet is a string key and a binary value of ValueSize.
	FormatParquet = "parquet"
	// FormatParquetFeatures is a 12-column feature table: ints, floats,
	// strings, a timestamp and a list (ValueSize does not apply).
	FormatParquetFeatures = "parquet-features"
)

func (o *Options) defaults() {
	if o.DB == "" {
		o.DB = DB
	}
	if o.Version == "" {
		o.Version = Version
	}
	if o.Keys <= 0 {
		o.Keys = 1_000_000
	}
	if o.Files <= 0 {
		o.Files = 8
	}
	if o.ValueSize <= 0 {
		o.ValueSize = 100
	}
	if o.Compression != seqfile.None && o.Codec == "" {
		o.Codec = seqfile.SnappyCodec
	}
}

// Dataset is a written source root.
type Dataset struct {
	// Root is the source root: Root/<Options.DB>/<Options.Version>/part-NNNNN.
	Root    string
	Options Options
	// Files are the data files' paths.
	Files []string
	// Bytes is the data files' total size.
	Bytes int64
}

// AppendKey appends key i ("key-" and KeyDigits digits) to dst.
func AppendKey(dst []byte, i int) []byte {
	var d [KeyDigits]byte
	for j := KeyDigits - 1; j >= 0; j-- {
		d[j] = byte('0' + i%10)
		i /= 10
	}
	return append(append(dst, "key-"...), d[:]...)
}

// AppendPath appends the request path of key i of the dataset's db.
// Keys need no escaping.
func AppendPath(dst []byte, i int) []byte {
	return AppendKey(append(dst, "/"+DB+"/"...), i)
}

// words make values that compress about as well as text does.
var words = [...]string{"spangle ", "sequins ", "hadoop ", "key ", "value ", "partition ", "replica ", "zookeeper ",
	"router ", "storage ", "version ", "block ", "level ", "table ", "cache ", "hedge "}

// fillValue fills v with key i's value: words drawn from a generator
// seeded by i, so any key's value can be recomputed.
func fillValue(v []byte, i int) {
	rng := rand.New(rand.NewPCG(uint64(i), 0x5eed))
	n := 0
	for n < len(v) {
		n += copy(v[n:], words[rng.IntN(len(words))])
	}
}

// Value returns key i's value for a dataset of values of size n.
func Value(i, n int) []byte {
	v := make([]byte, n)
	fillValue(v, i)
	return v
}

// Write writes a dataset under root (which must exist) and returns it.
// Files are written in parallel, one goroutine each, file f holding the
// keys of partition f in ascending order.
func Write(ctx context.Context, root string, o Options) (*Dataset, error) {
	o.defaults()
	if o.Format == FormatParquet || o.Format == FormatParquetFeatures {
		return writeParquetDataset(ctx, root, o)
	}
	vo := versiontest.Options{Files: o.Files, InPlace: true,
		SeqFile: seqfile.WriterOptions{Compression: o.Compression, Codec: o.Codec}}
	if o.Format == FormatSparkey {
		vo.Format, vo.Sparkey = versiontest.Sparkey, sparkey.WriterOptions{Compression: sparkey.Snappy}
		if o.SparkeyPlain {
			vo.Sparkey.Compression = sparkey.None
		}
	}
	w, err := versiontest.WriteFunc(root, o.DB, o.Version, vo, func(part int, put func(k, v []byte) error) error {
		key := make([]byte, 0, 32)
		val := make([]byte, o.ValueSize)
		for i := 0; i < o.Keys; i++ {
			key = AppendKey(key[:0], i)
			if partitioner.Partition(key, o.Files) != part {
				continue
			}
			if i%65536 == 0 && ctx.Err() != nil {
				return ctx.Err()
			}
			fillValue(val, i)
			if err := put(key, val); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	return &Dataset{Root: root, Options: o, Files: w.Files, Bytes: w.Bytes}, nil
}

// Decode reads and decodes every record of the dataset's files, as many
// files at once as parallel (at least 1), and returns the record count:
// the least work any load must do, the limit a load is measured against.
func Decode(ctx context.Context, files []string, parallel int) (int64, error) {
	parallel = max(parallel, 1)
	var n atomic.Int64
	errs := make([]error, len(files))
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i, path := range files {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			c, err := decodeFile(ctx, path)
			n.Add(c)
			errs[i] = err
		}()
	}
	wg.Wait()
	return n.Load(), errors.Join(errs...)
}

func decodeFile(ctx context.Context, path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("dataset: %w", err)
	}
	defer f.Close()
	r, err := seqfile.NewReader(f, path)
	if err != nil {
		return 0, fmt.Errorf("dataset: %w", err)
	}
	var n, sum int64
	for r.Next() {
		// Use the record, so the loop is not only a count.
		sum += int64(len(r.Key()) + len(r.Value()))
		n++
		if n%65536 == 0 && ctx.Err() != nil {
			return n, fmt.Errorf("dataset: %w", ctx.Err())
		}
	}
	if err := r.Err(); err != nil {
		return n, fmt.Errorf("dataset: %w", err)
	}
	if sum == 0 && n > 0 {
		return n, fmt.Errorf("dataset: %s: empty records", path)
	}
	return n, nil
}

// writeParquetDataset writes a Parquet dataset: Spark's file names, file
// f holding the keys of partition f in ascending order, and the db's
// _FORMAT (parquet.go).
func writeParquetDataset(ctx context.Context, root string, o Options) (*Dataset, error) {
	dir := filepath.Join(root, o.DB, o.Version)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	ds := &Dataset{Root: root, Options: o}
	for f := 0; f < o.Files; f++ {
		ds.Files = append(ds.Files, filepath.Join(dir, fmt.Sprintf("part-%05d-c000.snappy.parquet", f)))
	}
	errs := make([]error, o.Files)
	sizes := make([]int64, o.Files)
	var wg sync.WaitGroup
	for f := range ds.Files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sizes[f], errs[f] = writeParquet(ctx, ds.Files[f], f, o)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for _, s := range sizes {
		ds.Bytes += s
	}
	if err := writeFormatMarker(root, o); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "_SUCCESS"), nil, 0o644); err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	return ds, nil
}
