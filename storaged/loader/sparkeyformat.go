package loader

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"spangle/shared/source"
	"spangle/shared/sparkey"
)

// Sparkey file suffixes, as sequins names them: a log and its index in
// Snappy's framing format.
const (
	sparkeyLog   = ".spl"
	sparkeyIndex = ".spi.sz"
)

// SparkeyFormat reads Sparkey pairs as sequins does: NAME.spl with
// NAME.spi.sz, the first run of digits in NAME is the partition, N is the
// greatest partition plus one, and several pairs may share a partition.
type SparkeyFormat struct {
	// Stream, when set, streams every log into tables; else an
	// uncompressed log is served in place (Place).
	Stream bool
	// buffers, when set, holds the sparkey.Buffers of closed units for the
	// next ones, so that a load allocates the reading memory of the units
	// read at once rather than of every unit. DefaultFormats sets a fresh
	// one each call (each load); the zero SparkeyFormat allocates per unit.
	buffers *sync.Pool
}

// newSparkeyFormat is the SparkeyFormat of DefaultFormats.
func newSparkeyFormat() SparkeyFormat { return SparkeyFormat{buffers: new(sync.Pool)} }

// Name implements Format.
func (SparkeyFormat) Name() string { return "Sparkey" }

// Claims implements Format.
func (SparkeyFormat) Claims(name string) bool {
	return strings.HasSuffix(name, sparkeyLog) || strings.HasSuffix(name, sparkeyIndex)
}

// SparkeyPartition returns the partition a Sparkey file's name gives: the
// first run of digits of its base name.
func SparkeyPartition(base string) (int, bool) {
	i := strings.IndexFunc(base, isDigit)
	if i < 0 {
		return 0, false
	}
	j := i
	for j < len(base) && isDigit(rune(base[j])) {
		j++
	}
	p, err := strconv.Atoi(base[i:j])
	if err != nil || p >= 1<<20 {
		return 0, false
	}
	return p, true
}

func isDigit(r rune) bool { return r >= '0' && r <= '9' }

// maxSparkeyPartitions bounds N against a name like part-99999999.
const maxSparkeyPartitions = 1 << 16

// Layout implements Format: one unit per log, with its index.
func (SparkeyFormat) Layout(files []source.File) (Layout, error) {
	logs := map[string]source.File{}
	indexes := map[string]source.File{}
	for _, f := range files {
		if base, ok := strings.CutSuffix(f.Name, sparkeyLog); ok {
			logs[base] = f
		} else if base, ok := strings.CutSuffix(f.Name, sparkeyIndex); ok {
			indexes[base] = f
		}
	}
	var l Layout
	for _, f := range files {
		base, ok := strings.CutSuffix(f.Name, sparkeyLog)
		if !ok {
			if base, _ := strings.CutSuffix(f.Name, sparkeyIndex); logs[base].Name == "" {
				return Layout{}, fmt.Errorf("%w: %s has no log %s", ErrBadLayout, f.Name, base+sparkeyLog)
			}
			continue
		}
		ix, ok := indexes[base]
		if !ok {
			return Layout{}, fmt.Errorf("%w: %s has no index %s", ErrBadLayout, f.Name, base+sparkeyIndex)
		}
		p, ok := SparkeyPartition(base)
		if !ok || p >= maxSparkeyPartitions {
			return Layout{}, fmt.Errorf("%w: %s: no partition number (at most %d) in the name", ErrBadLayout, f.Name, maxSparkeyPartitions-1)
		}
		l.Units = append(l.Units, Unit{Files: []source.File{f, ix}, Partition: p})
		l.Partitions = max(l.Partitions, p+1)
	}
	return l, nil
}

// Open implements Format: the index is read whole first (see
// sparkey.NewReader), then the log is streamed.
func (f SparkeyFormat) Open(ctx context.Context, u Unit, in Input) (Records, error) {
	lg, err := in.Open(ctx, u.Files[0])
	if err != nil {
		return nil, err
	}
	return f.open(ctx, u, in, lg)
}

// open is Open with the log lg opened already; it takes lg.
func (f SparkeyFormat) open(ctx context.Context, u Unit, in Input, lg io.ReadCloser) (Records, error) {
	logf, ixf := u.Files[0], u.Files[1]
	ix, err := in.Open(ctx, ixf)
	if err != nil {
		lg.Close()
		return nil, err
	}
	defer ix.Close()
	var bufs *sparkey.Buffers
	if f.buffers != nil {
		bufs, _ = f.buffers.Get().(*sparkey.Buffers)
		if bufs == nil {
			bufs = new(sparkey.Buffers)
		}
	}
	r, err := bufs.NewReader(lg, logf.Size, in.Path(logf), ix, in.Path(ixf))
	if err != nil {
		f.putBuffers(bufs)
		lg.Close()
		return nil, fmt.Errorf("loader: %w", err)
	}
	return &sparkeyRecords{Reader: r, log: lg, f: f, bufs: bufs}, nil
}

func (f SparkeyFormat) putBuffers(b *sparkey.Buffers) {
	if f.buffers != nil && b != nil {
		f.buffers.Put(b)
	}
}

type sparkeyRecords struct {
	*sparkey.Reader
	log  io.Closer
	f    SparkeyFormat
	bufs *sparkey.Buffers // given back at Close
}

func (s *sparkeyRecords) Close() error {
	s.Reader.Close()
	s.f.putBuffers(s.bufs)
	s.bufs = nil
	return s.log.Close()
}
