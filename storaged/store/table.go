package store

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/syndtr/goleveldb/leveldb/filter"
	"github.com/syndtr/goleveldb/leveldb/journal"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/storage"
	"github.com/syndtr/goleveldb/leveldb/table"
)

// BuildOptions tunes how partitions are written. Zero values select the
// defaults noted.
type BuildOptions struct {
	// BlockSize is the uncompressed size of a table's data blocks; default
	// 4 KiB, which makes a lookup that misses the block cache read and
	// checksum less. Bigger blocks make smaller indexes for big versions.
	BlockSize int
	// BloomBitsPerKey sizes the bloom filter that makes misses cheap;
	// default 10. Negative disables it.
	BloomBitsPerKey int
	// Snappy compresses blocks. Off by default: batch output is often
	// already compact, and compressing costs load time.
	Snappy bool
	// RestartInterval is the keys between a data block's restart points
	// (where keys are stored whole and a lookup's binary search lands);
	// default 4, where LevelDB's is 16: a lookup then decodes about 2
	// entries after its binary search instead of 8, for a few bytes more
	// per block.
	RestartInterval int
	// NoSync skips fsync of the written files (tests and benchmarks).
	NoSync bool
}

func (o BuildOptions) blockSize() int {
	if o.BlockSize <= 0 {
		return 4 << 10
	}
	return o.BlockSize
}

func (o BuildOptions) restartInterval() int {
	if o.RestartInterval <= 0 {
		return 4
	}
	return o.RestartInterval
}

func (o BuildOptions) bloom() filter.Filter {
	switch {
	case o.BloomBitsPerKey < 0:
		return nil
	case o.BloomBitsPerKey == 0:
		return filter.NewBloomFilter(10)
	}
	return filter.NewBloomFilter(o.BloomBitsPerKey)
}

// ErrOrder is returned by RunWriter.Append for a key smaller than the
// previous one.
var ErrOrder = errors.New("store: keys out of order")

// LevelDB's on-disk constants that the builder needs: the comparer name
// recorded in the MANIFEST, the tags of a version edit, and the key type of
// a value. They are part of LevelDB's file format.
const (
	bytewiseComparer = "leveldb.BytewiseComparator"
	tagComparer      = 1
	tagJournalNum    = 2
	tagNextFileNum   = 3
	tagSeqNum        = 4
	tagAddTable      = 7
	keyTypeValue     = 1
	// seq is the sequence number of every key: versions are written once.
	seq = 1
)

// trailer is the 8 bytes LevelDB appends to a user key in its tables.
var trailer = func() [8]byte {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], seq<<8|keyTypeValue)
	return b
}()

// internalComparer orders LevelDB internal keys (user key, then 8 bytes of
// sequence and type) as LevelDB does. Every key has the same trailer here.
type internalComparer struct{}

func (internalComparer) Name() string { return bytewiseComparer }

func (internalComparer) Compare(a, b []byte) int {
	if c := bytes.Compare(a[:len(a)-8], b[:len(b)-8]); c != 0 {
		return c
	}
	// Greater sequence numbers sort first.
	x, y := binary.LittleEndian.Uint64(a[len(a)-8:]), binary.LittleEndian.Uint64(b[len(b)-8:])
	switch {
	case x > y:
		return -1
	case x < y:
		return 1
	}
	return 0
}

// Separator and Successor do not shorten index keys: the index then holds
// the last key of each block, which is always a valid separator.
func (internalComparer) Separator(dst, a, b []byte) []byte { return nil }
func (internalComparer) Successor(dst, b []byte) []byte    { return nil }

// userKeyFilter builds the filter over user keys, as LevelDB's reader
// queries it.
type userKeyFilter struct{ filter.Filter }

func (f userKeyFilter) NewGenerator() filter.FilterGenerator {
	return userKeyGenerator{f.Filter.NewGenerator()}
}

type userKeyGenerator struct{ filter.FilterGenerator }

func (g userKeyGenerator) Add(key []byte) { g.FilterGenerator.Add(key[:len(key)-8]) }

type tableInfo struct {
	num, size  int64
	imin, imax []byte
}

// PartitionBuilder writes one partition as a LevelDB database made of
// sorted runs. NewRun may be called from several goroutines; each
// RunWriter is used by one.
type PartitionBuilder struct {
	dir  string
	opts BuildOptions
	stor storage.Storage

	mu      sync.Mutex // guards next, tables and syncErr
	next    int64
	tables  []tableInfo
	syncErr error // the first failed background sync

	// syncs counts closed runs whose fsync still runs in the background,
	// so the disk writes one run while the loader reads the next file;
	// Finish waits for them before it writes the MANIFEST.
	syncs sync.WaitGroup
}

// CreatePartition starts a fresh partition database in dir, which must
// not exist yet or be empty.
func CreatePartition(dir string, opts BuildOptions) (*PartitionBuilder, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	stor, err := storage.OpenFile(dir, false)
	if err != nil {
		return nil, fmt.Errorf("store: opening %s: %w", dir, err)
	}
	return &PartitionBuilder{dir: dir, opts: opts, stor: stor, next: 2}, nil
}

// NewRun starts a sorted run: a table file of keys appended in ascending
// order. Runs of one partition may overlap.
func (b *PartitionBuilder) NewRun() (*RunWriter, error) {
	b.mu.Lock()
	num := b.next
	b.next++
	b.mu.Unlock()
	fd := storage.FileDesc{Type: storage.TypeTable, Num: num}
	f, err := b.stor.Create(fd)
	if err != nil {
		return nil, fmt.Errorf("store: creating table in %s: %w", b.dir, err)
	}
	o := &opt.Options{
		Comparer:             internalComparer{},
		BlockSize:            b.opts.blockSize(),
		Compression:          opt.NoCompression,
		BlockRestartInterval: b.opts.restartInterval(),
	}
	if b.opts.Snappy {
		o.Compression = opt.SnappyCompression
	}
	if bf := b.opts.bloom(); bf != nil {
		o.Filter = userKeyFilter{bf}
	}
	bw := bufio.NewWriterSize(f, 256<<10)
	return &RunWriter{b: b, fd: fd, f: f, bw: bw, tw: table.NewWriter(bw, o)}, nil
}

// RunWriter writes one sorted run. It is not safe for concurrent use.
type RunWriter struct {
	b    *PartitionBuilder
	fd   storage.FileDesc
	f    storage.Writer
	bw   *bufio.Writer
	tw   *table.Writer
	ikey []byte
	imin []byte
	n    int
}

// Append adds a key and its value. Keys must come in ascending order;
// an equal key is kept (one of the values wins on lookup).
func (w *RunWriter) Append(key, value []byte) error {
	if w.n > 0 && bytes.Compare(key, w.ikey[:len(w.ikey)-8]) < 0 {
		return fmt.Errorf("%w: %q after %q", ErrOrder, key, w.ikey[:len(w.ikey)-8])
	}
	w.ikey = append(append(w.ikey[:0], key...), trailer[:]...)
	if w.n == 0 {
		w.imin = append([]byte(nil), w.ikey...)
	}
	w.n++
	if err := w.tw.Append(w.ikey, value); err != nil {
		return fmt.Errorf("store: writing %s: %w", w.b.dir, err)
	}
	return nil
}

// Len is the number of records appended so far.
func (w *RunWriter) Len() int { return w.n }

// Close finishes the run and adds it to the partition. An empty run
// leaves no file behind. The run's fsync goes on in the background;
// Finish waits for it, so a partition is never described before its
// tables are on disk.
func (w *RunWriter) Close() error {
	if w.n == 0 {
		w.Abort()
		return nil
	}
	err := w.tw.Close()
	if err == nil {
		err = w.bw.Flush()
	}
	if err != nil {
		w.f.Close()
		w.b.stor.Remove(w.fd)
		return fmt.Errorf("store: finishing table in %s: %w", w.b.dir, err)
	}
	w.b.mu.Lock()
	w.b.tables = append(w.b.tables, tableInfo{
		num: w.fd.Num, size: int64(w.tw.BytesLen()),
		imin: w.imin, imax: append([]byte(nil), w.ikey...),
	})
	w.b.mu.Unlock()
	if w.b.opts.NoSync {
		if err := w.f.Close(); err != nil {
			w.b.failSync(fmt.Errorf("store: closing table in %s: %w", w.b.dir, err))
		}
		return nil
	}
	w.b.syncs.Add(1)
	go func() {
		defer w.b.syncs.Done()
		err := w.f.Sync()
		if cerr := w.f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			w.b.failSync(fmt.Errorf("store: syncing table in %s: %w", w.b.dir, err))
		}
	}()
	return nil
}

// failSync keeps the first error of a background sync for Finish.
func (b *PartitionBuilder) failSync(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.syncErr == nil {
		b.syncErr = err
	}
}

// Abort drops the run.
func (w *RunWriter) Abort() {
	w.f.Close()
	w.b.stor.Remove(w.fd)
}

// Finish writes the LevelDB MANIFEST and CURRENT files that make the runs
// a database, and releases the directory. Every run must be closed.
func (b *PartitionBuilder) Finish() error {
	defer b.stor.Close()
	b.syncs.Wait()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.syncErr != nil {
		return b.syncErr
	}
	fd := storage.FileDesc{Type: storage.TypeManifest, Num: 1}
	f, err := b.stor.Create(fd)
	if err != nil {
		return fmt.Errorf("store: creating manifest in %s: %w", b.dir, err)
	}
	jw := journal.NewWriter(f)
	rw, err := jw.Next()
	if err == nil {
		_, err = rw.Write(b.versionEdit())
	}
	if err == nil {
		err = jw.Close()
	}
	if err == nil && !b.opts.NoSync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = b.stor.SetMeta(fd)
	}
	if err != nil {
		return fmt.Errorf("store: writing manifest in %s: %w", b.dir, err)
	}
	return nil
}

// Abort releases the directory without making a database of it.
func (b *PartitionBuilder) Abort() {
	b.syncs.Wait()
	b.stor.Close()
}

// versionEdit encodes the one LevelDB version edit that describes the
// database: comparer, counters and every table at level 0 (runs overlap).
func (b *PartitionBuilder) versionEdit() []byte {
	var e []byte
	uv := func(x uint64) { e = binary.AppendUvarint(e, x) }
	bs := func(p []byte) { uv(uint64(len(p))); e = append(e, p...) }
	uv(tagComparer)
	bs([]byte(bytewiseComparer))
	uv(tagJournalNum)
	uv(0)
	uv(tagNextFileNum)
	uv(uint64(b.next))
	uv(tagSeqNum)
	uv(seq)
	for _, t := range b.tables {
		uv(tagAddTable)
		uv(0) // level
		uv(uint64(t.num))
		uv(uint64(t.size))
		bs(t.imin)
		bs(t.imax)
	}
	return e
}
