package loader

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"

	"spangle/shared/parquetkv"
	"spangle/shared/seqfile"
	"spangle/shared/source"
)

// ErrMixedFormats is returned for a version whose files are of more than
// one input format: the error names one file of each.
var ErrMixedFormats = errors.New("loader: version mixes input formats")

// ErrBadLayout is returned when a version's file names do not make a
// valid version of their format (a Sparkey log without its index, a name
// without a partition number).
var ErrBadLayout = errors.New("loader: bad version layout")

// Format is one input format. A format claims files by name; the files
// of a version all belong to one format. Implementations are safe for
// concurrent use and hold no state of their own.
type Format interface {
	// Name names the format in logs and errors.
	Name() string
	// Claims reports whether a data file of this name is of this format.
	// The SequenceFile format, tried last, claims every name.
	Claims(name string) bool
	// Layout groups a version's files (all claimed by this format) into
	// units and says the version's partition count.
	Layout(files []source.File) (Layout, error)
	// Open starts reading a unit's files through in.
	Open(ctx context.Context, u Unit, in Input) (Records, error)
}

// Input opens the files of the version being loaded. Every byte a format
// reads comes through Open: the one place to count progress.
type Input struct {
	src         source.Source
	db, version string
	// read, when set, counts the bytes read from the files (Progress).
	read *atomic.Int64
	// seq, when set, hands SequenceFile readers' buffers on from file to
	// file.
	seq *seqBuffers
}

// Open opens one file of the version.
func (in Input) Open(ctx context.Context, f source.File) (io.ReadCloser, error) {
	rc, err := in.src.Open(ctx, in.db, in.version, f.Name)
	if err != nil {
		return nil, fmt.Errorf("loader: opening %s: %w", in.Path(f), err)
	}
	if in.read != nil {
		c := countingReader{ReadCloser: rc, n: in.read}
		if ch, ok := rc.(seqfile.Chunker); ok {
			return countingChunker{c, ch}, nil
		}
		return c, nil
	}
	return rc, nil
}

// Path names a file of the version in errors: db/version/name.
func (in Input) Path(f source.File) string { return in.db + "/" + in.version + "/" + f.Name }

// Layout is a version's files as a format reads them.
type Layout struct {
	Format Format
	// Partitions is N: keys belong to partitioner.Partition(key, N).
	Partitions int
	// Units are read in parallel, each by one goroutine. When Duplicates
	// is not DuplicatesAny, their order is the order "first" and "last"
	// mean (Parquet: by file name).
	Units []Unit
	// Duplicates is what a key held by two records does.
	Duplicates Duplicates
	// ContentType, when set, is the Content-Type of the version's values;
	// empty leaves it to the node's setting.
	ContentType string
}

// Unit is what one reader reads: one data file, or a Sparkey log with
// its index.
type Unit struct {
	// Files[0] is the data file, the others its companions.
	Files []source.File
	// Partition, when >= 0, is the one partition every key of the unit
	// must belong to: a key of another fails the load, and a unit whose
	// partition is not held is not read at all. -1 means the keys may
	// belong to any partition (each goes to its own).
	Partition int
}

// Records yields a unit's pairs. Key and Value are valid until the next
// call to Next.
type Records interface {
	Next() bool
	Key() []byte
	Value() []byte
	// Offset is where the current record is, for errors.
	Offset() int64
	Err() error
	// Close closes the unit's files.
	Close() error
}

// DefaultFormats are the formats a loader knows, the catch-all
// SequenceFile last. Parquet maps columns as parquetkv.DefaultFormat
// says; a db with a _FORMAT marker is loaded with WithParquet.
func DefaultFormats() []Format {
	return []Format{newSparkeyFormat(), ParquetFormat{Spec: parquetkv.DefaultFormat()}, SequenceFileFormat{}}
}

// WithParquet returns formats with its Parquet format mapping columns as
// spec says (DefaultFormats when formats is empty).
func WithParquet(formats []Format, spec parquetkv.Format) []Format {
	if len(formats) == 0 {
		formats = DefaultFormats()
	}
	out := make([]Format, len(formats))
	for i, f := range formats {
		if pf, ok := f.(ParquetFormat); ok {
			pf.Spec = spec
			f = pf
		}
		out[i] = f
	}
	return out
}

// Detect finds the format of a version's files and lays them out.
func Detect(files []source.File, formats []Format) (Layout, error) {
	if len(formats) == 0 {
		formats = DefaultFormats()
	}
	if len(files) == 0 {
		return Layout{}, ErrNoFiles
	}
	var (
		format Format
		first  string
	)
	for _, f := range files {
		for _, ft := range formats {
			if !ft.Claims(f.Name) {
				continue
			}
			if format == nil {
				format, first = ft, f.Name
			} else if ft.Name() != format.Name() {
				return Layout{}, fmt.Errorf("%w: %s is %s, %s is %s", ErrMixedFormats, first, format.Name(), f.Name, ft.Name())
			}
			break
		}
	}
	if format == nil {
		return Layout{}, fmt.Errorf("%w: no format claims %s", ErrBadLayout, files[0].Name)
	}
	l, err := format.Layout(files)
	if err != nil {
		return Layout{}, err
	}
	l.Format = format
	return l, nil
}

// NumPartitions returns the partition count of a version listing files,
// in formats (nil: the default formats; a db with a _FORMAT marker passes
// WithParquet's): what every node and the coordinator agree on, since
// every node reads the same marker.
func NumPartitions(files []source.File, formats []Format) (int, error) {
	l, err := Detect(files, formats)
	if err != nil {
		return 0, err
	}
	return l.Partitions, nil
}
