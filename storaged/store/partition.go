package store

import (
	"errors"
	"fmt"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/filter"
	"github.com/syndtr/goleveldb/leveldb/opt"
)

// ErrNotFound is returned by Partition.Get for a key it does not hold.
var ErrNotFound = errors.New("store: key not found")

// CacheOptions bounds the memory of an open partition. Zero values select
// the defaults noted.
type CacheOptions struct {
	// BlockCacheSize is the byte size of the partition's block cache, which
	// also holds its index and bloom filter blocks; default 8 MiB.
	BlockCacheSize int
	// OpenFiles bounds the table files kept open; default 16.
	OpenFiles int
}

// Partition is one loaded partition, opened read-only. It is safe for
// concurrent use.
type Partition struct {
	db *leveldb.DB
	// snap is held open for the partition's life: it never changes, and a
	// lookup through a snapshot takes a shared lock where DB.Get takes
	// the DB's snapshot mutex twice and allocates a list element.
	snap *leveldb.Snapshot
}

// OpenPartition opens a partition database built by PartitionBuilder (or
// any LevelDB database with a bytewise comparer).
func OpenPartition(dir string, o CacheOptions) (*Partition, error) {
	cacheSize := o.BlockCacheSize
	if cacheSize <= 0 {
		cacheSize = 8 << 20
	}
	files := o.OpenFiles
	if files <= 0 {
		files = 16
	}
	db, err := leveldb.OpenFile(dir, &opt.Options{
		ReadOnly:               true,
		ErrorIfMissing:         true,
		BlockCacheCapacity:     cacheSize,
		OpenFilesCacheCapacity: files,
		// Read-only: the memtable is never written, so keep it tiny.
		WriteBuffer: 64 << 10,
		Filter:      filter.NewBloomFilter(10),
	})
	if err != nil {
		return nil, fmt.Errorf("store: opening partition %s: %w", dir, err)
	}
	snap, err := db.GetSnapshot()
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("store: opening partition %s: %w", dir, err)
	}
	return &Partition{db: db, snap: snap}, nil
}

// Get returns the value of key, a fresh slice the caller may keep, or
// ErrNotFound.
func (p *Partition) Get(key []byte) ([]byte, error) {
	v, err := p.snap.Get(key, nil)
	if err != nil {
		if errors.Is(err, leveldb.ErrNotFound) {
			return nil, ErrNotFound
		}
		return nil, fmt.Errorf("store: %w", err)
	}
	return v, nil
}

// Close closes the partition. Gets must have returned.
func (p *Partition) Close() error {
	p.snap.Release()
	return p.db.Close()
}
