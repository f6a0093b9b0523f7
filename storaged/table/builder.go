package table

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/syndtr/goleveldb/leveldb/journal"

	"spangle/storaged/internal/fsync"
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
	// NoSync makes Sync a no-op: nothing is fsynced (tests and
	// benchmarks).
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

// ErrOrder is returned by RunWriter.Append for a key smaller than the
// previous one.
var ErrOrder = errors.New("table: keys out of order")

// LevelDB's on-disk constants that the builder needs: the comparer name
// recorded in the descriptor, the tags of a version edit, and the key type of
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
	// descriptorNum is the file number of the descriptor; tables are
	// numbered after it.
	descriptorNum = 1
)

// trailer is the 8 bytes LevelDB appends to a user key in its tables.
var trailer = func() [8]byte {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], seq<<8|keyTypeValue)
	return b
}()

type tableInfo struct {
	num, size  uint64
	imin, imax []byte
	// opened is the index and filter its writer made, for Open; nil
	// once Open has handed them to the table.
	opened *writtenTable
}

// PartitionBuilder writes one partition as a LevelDB database made of
// sorted runs. NewRun may be called from several goroutines; each
// RunWriter is used by one.
//
// Building and making durable are apart: once Finish returns the
// partition can be opened and served from the page cache, and Sync then
// waits for its files to reach the disk. A crash before Sync returns
// leaves files that must not be trusted, which the caller's own record of
// a complete build (package store's manifest) is written after Sync to say.
type PartitionBuilder struct {
	dir  string
	opts BuildOptions

	mu     sync.Mutex // guards next, tables and named
	next   uint64
	tables []tableInfo
	// named is set once the descriptor and CURRENT exist, empty until
	// Finish writes them (see NewRun).
	named bool
}

// CreatePartition starts a fresh partition database in dir, which must
// not exist yet or be empty.
func CreatePartition(dir string, opts BuildOptions) (*PartitionBuilder, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("table: %w", err)
	}
	return &PartitionBuilder{dir: dir, opts: opts, next: descriptorNum + 1}, nil
}

// descriptorName is the file name of the descriptor the builder writes
// (LevelDB calls it a MANIFEST), file number descriptorNum, which CURRENT
// names.
const descriptorName = "MANIFEST-000001"

// NewRun starts a sorted run: a table file of keys appended in ascending
// order. Runs of one partition may overlap.
//
// The first run also creates the descriptor and CURRENT, empty: Finish,
// which comes after the last record of a load and on its serial end,
// then writes into files that exist. Creating a file costs ext4 a search
// of its inode bitmaps, which after many files removed (a store's
// replaced versions) took 0.4 ms a file, 7 ms of CPU for 8 partitions.
// Until Finish, the empty CURRENT names no descriptor: the partition
// does not open, as it would not without the file.
func (b *PartitionBuilder) NewRun() (*RunWriter, error) {
	b.mu.Lock()
	num := b.next
	b.next++
	err := b.createNamesLocked()
	b.mu.Unlock()
	if err != nil {
		return nil, err
	}
	f, err := os.Create(tableFile(b.dir, num))
	if err != nil {
		return nil, fmt.Errorf("table: creating table in %s: %w", b.dir, err)
	}
	pf := &preallocFile{f: f}
	return &RunWriter{b: b, num: num, f: f, pf: pf, w: newSSTWriter(pf, b.opts)}, nil
}

// createNamesLocked creates the descriptor and CURRENT, empty, unless
// they were. b.mu is held.
func (b *PartitionBuilder) createNamesLocked() error {
	if b.named {
		return nil
	}
	for _, name := range []string{descriptorName, "CURRENT"} {
		f, err := os.Create(filepath.Join(b.dir, name))
		if err != nil {
			return fmt.Errorf("table: creating %s in %s: %w", name, b.dir, err)
		}
		if err := f.Close(); err != nil {
			return fmt.Errorf("table: creating %s in %s: %w", name, b.dir, err)
		}
	}
	b.named = true
	return nil
}

// RunWriter writes one sorted run. It is not safe for concurrent use.
type RunWriter struct {
	b    *PartitionBuilder
	num  uint64
	f    *os.File
	pf   *preallocFile
	w    *sstWriter
	imin []byte // the first user key
	n    int
	done *tableInfo // finished, not committed
}

// Append adds a key and its value. Keys must come in ascending order
// (ErrOrder); an equal key is kept (one of the values wins on lookup).
func (w *RunWriter) Append(key, value []byte) error {
	if err := w.w.add(key, value); err != nil {
		if errors.Is(err, ErrOrder) {
			return err
		}
		return fmt.Errorf("table: writing %s: %w", w.b.dir, err)
	}
	if w.n == 0 {
		w.imin = bytes.Clone(key)
	}
	w.n++
	return nil
}

// Len is the number of records appended so far.
func (w *RunWriter) Len() int { return w.n }

// Close finishes the run and adds it to the partition. An empty run
// leaves no file behind.
func (w *RunWriter) Close() error {
	if err := w.Finish(); err != nil {
		return err
	}
	w.Commit()
	return nil
}

// Finish writes the rest of the run's table and lets its buffers go, but
// does not add it to the partition yet: Commit does, or Abort removes it.
// A caller that may still drop a finished run (the loader, until it knows
// no other record shares its partition) keeps only this much of it. An
// empty run leaves no file behind.
func (w *RunWriter) Finish() error {
	if w.n == 0 {
		w.Abort()
		return nil
	}
	size, err := w.w.finish()
	imax := append(bytes.Clone(w.w.lastKey), trailer[:]...)
	// Kept for the table's life: copies made to size, as an open from
	// the file makes them; the writer's own go back with it.
	o := w.w.opened
	opened := &writtenTable{seps: bytes.Clone(o.seps), sepEnd: slices.Clone(o.sepEnd),
		handles: slices.Clone(o.handles), filter: o.filter}
	w.w.release()
	w.w = nil
	if err == nil {
		err = w.pf.finish()
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(w.f.Name())
		return fmt.Errorf("table: finishing table in %s: %w", w.b.dir, err)
	}
	w.done = &tableInfo{num: w.num, size: size, imin: append(w.imin, trailer[:]...), imax: imax, opened: opened}
	return nil
}

// Commit adds a finished run to the partition.
func (w *RunWriter) Commit() {
	if w.done == nil {
		return
	}
	w.b.mu.Lock()
	w.b.tables = append(w.b.tables, *w.done)
	w.b.mu.Unlock()
	w.done = nil
}

// Abort drops the run.
func (w *RunWriter) Abort() {
	w.done = nil
	if w.w != nil {
		w.w.release()
		w.w = nil
	}
	w.f.Close()
	os.Remove(w.f.Name())
}

// Finish writes the descriptor and CURRENT files that make the runs
// a database, which may then be opened. Every run must be closed. Nothing
// is synced yet: see Sync.
func (b *PartitionBuilder) Finish() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	f, err := os.Create(filepath.Join(b.dir, descriptorName))
	if err != nil {
		return fmt.Errorf("table: creating descriptor in %s: %w", b.dir, err)
	}
	jw := journal.NewWriter(f)
	rw, err := jw.Next()
	if err == nil {
		_, err = rw.Write(b.versionEdit())
	}
	if err == nil {
		err = jw.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		// CURRENT names the descriptor. It is written in place, not aside
		// and renamed: a partition cut short by a crash is never opened,
		// since its build is only recorded complete after Sync.
		err = os.WriteFile(filepath.Join(b.dir, "CURRENT"), []byte(descriptorName+"\n"), 0o644)
	}
	if err != nil {
		return fmt.Errorf("table: writing descriptor in %s: %w", b.dir, err)
	}
	return nil
}

// Open opens the finished partition (Finish has returned) for lookups as
// OpenPartition does, but without reading back what its tables' writers
// kept: each table's index and filter come from memory, checked as a
// read-back one is only for order, since they were never on a disk.
// Tables not written by this builder's runs, and Sparkey pairs placed
// beside them, are opened from their files. It hands the writers' index
// and filter to the tables; a second Open reads them from the files.
func (b *PartitionBuilder) Open(o CacheOptions) (*Partition, error) {
	b.mu.Lock()
	byNum := make(map[uint64]*tableInfo, len(b.tables))
	for i := range b.tables {
		byNum[b.tables[i].num] = &b.tables[i]
	}
	defer b.mu.Unlock()
	return openPartition(b.dir, o, func(num uint64, path string) (*sstable, error) {
		ti := byNum[num]
		if ti == nil || ti.opened == nil {
			return openTable(path, o.Blocks)
		}
		opened := ti.opened
		ti.opened = nil
		return openWritten(path, ti.size, opened, o.Blocks)
	})
}

// Sync returns once every file of the finished partition, and the
// directory naming them, is on disk. The tables are synced in parallel.
func (b *PartitionBuilder) Sync() error {
	if b.opts.NoSync {
		return nil
	}
	b.mu.Lock()
	paths := []string{filepath.Join(b.dir, descriptorName), filepath.Join(b.dir, "CURRENT")}
	for _, t := range b.tables {
		paths = append(paths, tableFile(b.dir, t.num))
	}
	b.mu.Unlock()
	paths = append(paths, b.dir)
	errs := make([]error, len(paths))
	var wg sync.WaitGroup
	for i, p := range paths {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fsync.Path(p)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("table: syncing %s: %w", b.dir, err)
	}
	return nil
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
	uv(b.next)
	uv(tagSeqNum)
	uv(seq)
	for _, t := range b.tables {
		uv(tagAddTable)
		uv(0) // level
		uv(t.num)
		uv(t.size)
		bs(t.imin)
		bs(t.imax)
	}
	return e
}
