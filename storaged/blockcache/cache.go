package blockcache

import (
	"sync"
	"sync/atomic"
)

// The cache is split in numShards so that concurrent inserts rarely wait
// on one another.
const (
	shardBits = 4
	numShards = 1 << shardBits
)

// Key names a block: the table it belongs to (an ID from NewTableID) and
// its offset in the table's file.
type Key struct {
	Table  uint64
	Offset uint64
}

// Cache holds blocks up to a byte bound. It is safe for concurrent use.
// A nil *Cache caches nothing.
type Cache struct {
	shards   [numShards]shard
	perShard int64
	tables   atomic.Uint64
}

type shard struct {
	mu      sync.RWMutex // guards entries, ring, hand and size
	entries map[Key]*entry
	// ring is the CLOCK: the hand sweeps it, an evicted entry's slot is
	// filled by the last entry.
	ring []*entry
	hand int
	size int64

	hits, misses atomic.Int64
	_            [64]byte // keep neighbouring shards' counters apart
}

type entry struct {
	key  Key
	data []byte
	ref  atomic.Bool // set by a hit, cleared by the sweep
}

// New returns a cache of at most capacity bytes of blocks; capacity <= 0
// returns nil, which caches nothing.
func New(capacity int64) *Cache {
	if capacity <= 0 {
		return nil
	}
	c := &Cache{perShard: capacity / numShards}
	for i := range c.shards {
		c.shards[i].entries = map[Key]*entry{}
	}
	return c
}

// NewTableID returns a table ID no other table of this cache has: a table
// takes one when it is opened, so a table built again under the same file
// name never sees the old file's blocks.
func (c *Cache) NewTableID() uint64 {
	if c == nil {
		return 0
	}
	return c.tables.Add(1)
}

func (c *Cache) shard(k Key) *shard {
	h := (k.Table*0x9e3779b97f4a7c15 ^ k.Offset) * 0xbf58476d1ce4e5b9
	return &c.shards[h>>(64-shardBits)]
}

// Get returns the cached block of k. The block must not be modified.
func (c *Cache) Get(k Key) ([]byte, bool) {
	if c == nil {
		return nil, false
	}
	s := c.shard(k)
	s.mu.RLock()
	e := s.entries[k]
	s.mu.RUnlock()
	if e == nil {
		s.misses.Add(1)
		return nil, false
	}
	if !e.ref.Load() {
		e.ref.Store(true)
	}
	s.hits.Add(1)
	return e.data, true
}

// Add caches block under k, evicting blocks not used since the hand last
// passed them until the shard fits its bound. A block bigger than a shard's
// bound is not cached. The cache keeps block: the caller must not modify it
// afterwards.
func (c *Cache) Add(k Key, block []byte) {
	if c == nil || int64(len(block)) > c.perShard {
		return
	}
	s := c.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.entries[k]; ok {
		return
	}
	s.size += int64(len(block))
	for s.size > c.perShard && len(s.ring) > 0 {
		s.sweepLocked()
	}
	e := &entry{key: k, data: block}
	s.entries[k] = e
	s.ring = append(s.ring, e)
}

// sweepLocked advances the hand by one entry: an entry used since the last
// pass loses its reference bit, an unused one is evicted.
func (s *shard) sweepLocked() {
	if s.hand >= len(s.ring) {
		s.hand = 0
	}
	e := s.ring[s.hand]
	if e.ref.Load() {
		e.ref.Store(false)
		s.hand++
		return
	}
	s.removeAtLocked(s.hand)
}

func (s *shard) removeAtLocked(i int) {
	e := s.ring[i]
	delete(s.entries, e.key)
	s.size -= int64(len(e.data))
	last := len(s.ring) - 1
	s.ring[i] = s.ring[last]
	s.ring[last] = nil
	s.ring = s.ring[:last]
}

// DropTable forgets every block of a table, as when its partition is
// closed, so they do not hold memory until the hand reaches them.
func (c *Cache) DropTable(table uint64) {
	if c == nil {
		return
	}
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		for j := 0; j < len(s.ring); {
			if s.ring[j].key.Table == table {
				s.removeAtLocked(j)
				continue
			}
			j++
		}
		s.mu.Unlock()
	}
}

// Stats is a snapshot of the cache's use.
type Stats struct {
	Hits, Misses int64
	// Bytes held and the bound.
	Bytes, Capacity int64
	Blocks          int
}

// Stats returns the cache's counters; zero for a nil cache.
func (c *Cache) Stats() Stats {
	var st Stats
	if c == nil {
		return st
	}
	st.Capacity = c.perShard * numShards
	for i := range c.shards {
		s := &c.shards[i]
		st.Hits += s.hits.Load()
		st.Misses += s.misses.Load()
		s.mu.RLock()
		st.Bytes += s.size
		st.Blocks += len(s.ring)
		s.mu.RUnlock()
	}
	return st
}
