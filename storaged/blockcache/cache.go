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
//
// A block is read only inside Get's callback, under its shard's read
// lock, and evicted only under the write lock: an evicted block's buffer
// is then unused, and Buffer hands it out again for the next block read.
// A cache that misses all the time therefore makes little garbage. The
// buffers come from an arena outside Go's heap, so the process's memory
// stays near the bound instead of the collector's twice the live heap.
type Cache struct {
	shards   [numShards]shard
	perShard int64
	tables   atomic.Uint64
	arena    *arena
}

// arenaSlack is what the arena may map beyond the cache's bound: buffers
// being read into, free buffers of one size class waiting while another
// is asked for, and each chunk's unused end.
func arenaSlack(capacity int64) int64 { return capacity/16 + 2*chunkSize }

// A shard keeps at most maxFree evicted buffers for reuse, each of at
// most maxFreeBuffer bytes (tables' blocks are some KiB).
const (
	maxFree       = 16
	maxFreeBuffer = 256 << 10
)

type shard struct {
	arena *arena
	mu    sync.RWMutex // guards slotOf, ring, hand, size and free
	// slotOf maps a key to its entry's index in ring. Neither holds a
	// pointer but the blocks' (mostly outside the heap), so the collector
	// scans one array instead of chasing an object per block: a cache of
	// hundreds of thousands of blocks costs each collection little.
	slotOf map[Key]int32
	// ring is the CLOCK: the hand sweeps it, an evicted entry's slot is
	// filled by the last entry.
	ring []entry
	hand int
	size int64    // the capacity of the buffers held
	free [][]byte // buffers of the heap, when the arena had none

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
	c := &Cache{perShard: capacity / numShards, arena: newArena(capacity + arenaSlack(capacity))}
	for i := range c.shards {
		c.shards[i].slotOf = map[Key]int32{}
		c.shards[i].arena = c.arena
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

// Get calls read with the cached block of k and reports whether there was
// one. read runs under a read lock: it must not keep the block or any
// slice of it, nor call the cache.
func (c *Cache) Get(k Key, read func(block []byte)) bool {
	if c == nil {
		return false
	}
	s := c.shard(k)
	s.mu.RLock()
	i, ok := s.slotOf[k]
	if !ok {
		s.mu.RUnlock()
		s.misses.Add(1)
		return false
	}
	e := &s.ring[i]
	if !e.ref.Load() {
		e.ref.Store(true)
	}
	read(e.data)
	s.mu.RUnlock()
	s.hits.Add(1)
	return true
}

// bufferSize rounds a buffer's capacity up, so that blocks of about one
// size (a table's data blocks end at the first entry past the block size)
// fit each other's buffers.
func bufferSize(n int) int { return (n + 511) &^ 511 }

// Buffer returns a buffer of length n for the block k about to be read and
// added: an evicted block's when one is big enough, else new memory of the
// arena's, else (the arena full, or a huge block) of the heap.
func (c *Cache) Buffer(k Key, n int) []byte {
	if c != nil {
		if n <= maxFreeBuffer {
			if b := c.arena.get(n); b != nil {
				return b
			}
		}
		s := c.shard(k)
		s.mu.Lock()
		for i := len(s.free) - 1; i >= 0; i-- {
			if b := s.free[i]; cap(b) >= n {
				s.free[i] = s.free[len(s.free)-1]
				s.free[len(s.free)-1] = nil
				s.free = s.free[:len(s.free)-1]
				s.mu.Unlock()
				return b[:n]
			}
		}
		s.mu.Unlock()
	}
	return make([]byte, n, bufferSize(n))
}

// Discard takes back a buffer of block k that was not added.
func (c *Cache) Discard(k Key, b []byte) {
	if c == nil {
		return
	}
	s := c.shard(k)
	s.mu.Lock()
	s.freeLocked(b)
	s.mu.Unlock()
}

func (s *shard) freeLocked(b []byte) {
	if s.arena.put(b) {
		return
	}
	// A block of a huge value is not worth holding for reuse.
	if len(s.free) < maxFree && cap(b) <= maxFreeBuffer {
		s.free = append(s.free, b[:0])
	}
}

// Add caches block under k, evicting blocks not used since the hand last
// passed them until the shard fits its bound. The cache owns block from
// then on: the caller must not use it again. A block bigger than a
// shard's bound, or one already cached, is discarded.
func (c *Cache) Add(k Key, block []byte) {
	if c == nil {
		return
	}
	s := c.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.slotOf[k]; ok || int64(cap(block)) > c.perShard {
		s.freeLocked(block)
		return
	}
	s.size += int64(cap(block))
	for s.size > c.perShard && len(s.ring) > 0 {
		if b := s.sweepLocked(); b != nil {
			s.freeLocked(b)
		}
	}
	s.slotOf[k] = int32(len(s.ring))
	s.ring = append(s.ring, entry{key: k, data: block})
}

// sweepLocked advances the hand by one entry: an entry used since the last
// pass loses its reference bit, an unused one is evicted and its block
// returned.
func (s *shard) sweepLocked() []byte {
	if s.hand >= len(s.ring) {
		s.hand = 0
	}
	e := &s.ring[s.hand]
	if e.ref.Load() {
		e.ref.Store(false)
		s.hand++
		return nil
	}
	return s.removeAtLocked(s.hand)
}

func (s *shard) removeAtLocked(i int) []byte {
	e := &s.ring[i]
	data := e.data
	delete(s.slotOf, e.key)
	s.size -= int64(cap(data))
	last := len(s.ring) - 1
	if i != last {
		l := &s.ring[last]
		e.key, e.data = l.key, l.data
		e.ref.Store(l.ref.Load())
		s.slotOf[e.key] = int32(i)
	}
	s.ring[last].data = nil
	s.ring = s.ring[:last]
	return data
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
				s.freeLocked(s.removeAtLocked(j))
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
	// Bytes held (the blocks' buffers) and the bound.
	Bytes, Capacity int64
	Blocks          int
	// Mapped is the memory mapped for buffers outside Go's heap: it
	// grows to about the bound and stays there.
	Mapped int64
}

// Stats returns the cache's counters; zero for a nil cache.
func (c *Cache) Stats() Stats {
	var st Stats
	if c == nil {
		return st
	}
	st.Capacity = c.perShard * numShards
	st.Mapped = c.arena.mappedBytes()
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
