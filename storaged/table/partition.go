package table

import (
	"bytes"
	"errors"
	"fmt"

	"spangle/storaged/blockcache"
)

// ErrNotFound is returned by Partition.Get for a key it does not hold.
var ErrNotFound = errors.New("table: key not found")

// CacheOptions says what open partitions read through.
type CacheOptions struct {
	// Blocks is the node's block cache, shared by every open partition;
	// nil reads every block from its file (the page cache still helps).
	Blocks *blockcache.Cache
}

// Partition is one loaded partition: a LevelDB database opened for point
// lookups. It reads LevelDB's files itself instead of through goleveldb:
// the tables never change, so it needs no snapshot, version set or
// iterator, keeps each table's index and bloom filter in memory, and
// looks a key up without allocating. It is safe for concurrent use.
//
// A partition may also serve Sparkey pairs in place (sparkey.go), tried
// after its tables.
type Partition struct {
	dir    string
	tables []partTable // in the order a lookup tries them
	pairs  []*mappedPair
}

type partTable struct {
	*sstable
	smallest, largest []byte // user keys
}

// OpenPartition opens a partition database built by PartitionBuilder, or
// any LevelDB database with the bytewise comparer whose journal is empty,
// and the Sparkey pairs placed beside it (PlaceSparkeyPair).
func OpenPartition(dir string, o CacheOptions) (*Partition, error) {
	return openPartition(dir, o, func(_ uint64, path string) (*sstable, error) { return openTable(path, o.Blocks) })
}

// openPartition is OpenPartition with each table (its file number and
// path) opened by open.
func openPartition(dir string, o CacheOptions, open func(num uint64, path string) (*sstable, error)) (*Partition, error) {
	refs, err := readDescriptor(dir)
	if err != nil {
		return nil, fmt.Errorf("table: opening partition %s: %w", dir, err)
	}
	p := &Partition{dir: dir}
	for _, ref := range refs {
		t, err := open(ref.num, tablePath(dir, ref.num))
		if err != nil {
			p.Close()
			return nil, fmt.Errorf("table: opening partition %s: %w", dir, err)
		}
		p.tables = append(p.tables, partTable{sstable: t, smallest: ref.smallest, largest: ref.largest})
	}
	if p.pairs, err = openSparkeyPairs(dir); err != nil {
		p.Close()
		return nil, fmt.Errorf("table: opening partition %s: %w", dir, err)
	}
	return p, nil
}

// Get appends the value of key to dst and returns the result, or
// ErrNotFound. Blocks are searched where the cache holds them; a lookup
// whose block is cached allocates nothing when dst has room.
func (p *Partition) Get(dst, key []byte) ([]byte, error) {
	for i := range p.tables {
		t := &p.tables[i]
		if bytes.Compare(key, t.smallest) < 0 || bytes.Compare(key, t.largest) > 0 {
			continue
		}
		v, found, deleted, err := t.get(dst, key)
		switch {
		case err != nil:
			return dst, err
		case deleted:
			return dst, ErrNotFound
		case found:
			return v, nil
		}
	}
	if p.pairs != nil {
		return getSparkey(p.pairs, dst, key)
	}
	return dst, ErrNotFound
}

// Close closes the partition's files and drops its blocks from the cache.
// Gets must have returned.
func (p *Partition) Close() error {
	var errs []error
	for _, t := range p.tables {
		errs = append(errs, t.close())
	}
	p.tables = nil
	for _, m := range p.pairs {
		errs = append(errs, m.close())
	}
	p.pairs = nil
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("table: closing partition %s: %w", p.dir, err)
	}
	return nil
}
