package blockcache

import (
	"bytes"
	"encoding/binary"
	"runtime"
	"sync"
	"testing"
)

func block(n int, b byte) []byte { return bytes.Repeat([]byte{b}, n) }

// get copies out the cached block of k, or nil.
func get(c *Cache, k Key) []byte {
	var out []byte
	c.Get(k, func(b []byte) { out = bytes.Clone(b) })
	return out
}

// The cache never holds more than its bound, answers what it holds with
// the very bytes added, and counts hits and misses.
func TestBound(t *testing.T) {
	c := New(numShards * 10_000)
	for i := 0; i < 2000; i++ {
		c.Add(Key{1, uint64(i)}, block(1000, byte(i)))
		if st := c.Stats(); st.Bytes > st.Capacity {
			t.Fatalf("after %d adds: %d bytes held, bound %d", i+1, st.Bytes, st.Capacity)
		}
	}
	st := c.Stats()
	if st.Blocks < numShards*5 || st.Bytes < st.Capacity/2 {
		t.Fatalf("the cache keeps too little: %+v", st)
	}
	held := 0
	for i := 0; i < 2000; i++ {
		if b := get(c, Key{1, uint64(i)}); b != nil {
			held++
			if !bytes.Equal(b, block(1000, byte(i))) {
				t.Fatalf("block %d came back changed", i)
			}
		}
	}
	st = c.Stats()
	if held != st.Blocks || st.Hits != int64(held) || st.Misses != int64(2000-held) {
		t.Fatalf("%d blocks found; stats %+v", held, st)
	}
	// Too big for a shard: not cached, nothing evicted for it.
	c.Add(Key{2, 0}, block(10_001, 0))
	if get(c, Key{2, 0}) != nil {
		t.Fatal("a block over a shard's bound was cached")
	}
	if c.Stats().Blocks != st.Blocks {
		t.Fatal("an uncacheable block evicted others")
	}
}

// A block used since the hand last passed survives the next sweep: a hot
// block stays while cold ones stream through.
func TestSecondChance(t *testing.T) {
	c := New(numShards * 4_000)
	hot := Key{1, 0}
	c.Add(hot, block(1000, 1))
	for i := 1; i < 5000; i++ {
		if get(c, hot) == nil {
			t.Fatalf("the hot block was evicted after %d cold adds", i)
		}
		c.Add(Key{1, uint64(i)}, block(1000, 2))
	}
}

// Evicted blocks' buffers come back from Buffer, so a cache at its bound
// reads new blocks into old memory.
func TestRecycles(t *testing.T) {
	c := New(numShards * 4_000)
	seen := map[*byte]bool{}
	for i := 0; i < 2000; i++ {
		k := Key{1, uint64(i)}
		b := c.Buffer(k, 900+i%100) // blocks of about one size
		seen[&b[:1][0]] = true
		c.Add(k, b)
	}
	// 16 shards of 4 blocks hold 64: the rest were read into evicted
	// blocks' buffers.
	if len(seen) > 2*numShards*4 {
		t.Fatalf("%d distinct buffers for 2000 blocks: evicted ones are not reused", len(seen))
	}
	if b := c.Buffer(Key{}, 5000); len(b) != 5000 {
		t.Fatalf("Buffer(5000) has length %d", len(b))
	}
}

// DropTable forgets one table's blocks and only those; IDs are new each
// time.
func TestDropTable(t *testing.T) {
	c := New(1 << 20)
	a, b := c.NewTableID(), c.NewTableID()
	if a == b {
		t.Fatal("two tables got one ID")
	}
	for i := 0; i < 50; i++ {
		c.Add(Key{a, uint64(i)}, block(100, 1))
		c.Add(Key{b, uint64(i)}, block(100, 2))
	}
	c.DropTable(a)
	for i := 0; i < 50; i++ {
		if get(c, Key{a, uint64(i)}) != nil {
			t.Fatalf("block %d of a dropped table is still cached", i)
		}
		if get(c, Key{b, uint64(i)}) == nil {
			t.Fatalf("block %d of the other table is gone", i)
		}
	}
	if st := c.Stats(); st.Bytes != 50*100 || st.Blocks != 50 {
		t.Fatalf("after the drop: %+v", st)
	}
}

// A nil cache (block_cache_size 0) caches nothing and does not fail.
func TestNil(t *testing.T) {
	c := New(0)
	if c != nil {
		t.Fatal("New(0) is not nil")
	}
	c.Add(Key{1, 1}, []byte("x"))
	if c.Get(Key{1, 1}, func([]byte) { t.Fatal("read called") }) {
		t.Fatal("a nil cache answered")
	}
	if len(c.Buffer(Key{}, 10)) != 10 {
		t.Fatal("Buffer of a nil cache")
	}
	c.Discard(Key{}, nil)
	c.DropTable(c.NewTableID())
	if st := c.Stats(); st != (Stats{}) {
		t.Fatalf("stats of a nil cache: %+v", st)
	}
}

// fill writes k into every 8 bytes of b, so a reader can tell whose block
// it holds.
func fill(b []byte, k Key) {
	for i := 0; i+8 <= len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], k.Table<<32|k.Offset)
	}
}

// Readers, writers and drops at once, with buffers recycled (run with
// -race): a block read inside Get is always whole and the one added under
// its key, never a buffer being refilled for another.
func TestConcurrentRecycling(t *testing.T) {
	c := New(numShards * 8_000)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 5000; i++ {
				k := Key{uint64(i % 3), uint64((i * 7919) % 997)}
				ok := c.Get(k, func(b []byte) {
					want := k.Table<<32 | k.Offset
					for j := 0; j+8 <= len(b); j += 8 {
						if got := binary.LittleEndian.Uint64(b[j:]); got != want {
							t.Errorf("block of %v holds %x at %d", k, got, j)
							return
						}
					}
				})
				if ok {
					continue
				}
				b := c.Buffer(k, 1000)
				fill(b, k)
				c.Add(k, b)
				if i%1000 == 999 {
					c.DropTable(uint64(g % 3))
				}
			}
		}()
	}
	wg.Wait()
	if st := c.Stats(); st.Bytes > st.Capacity {
		t.Fatalf("over the bound: %+v", st)
	}
}

// A huge block's buffer is not kept for reuse once evicted.
func TestHugeBufferNotKept(t *testing.T) {
	c := New(numShards * (1 << 20))
	k := Key{1, 0}
	c.Discard(k, make([]byte, maxFreeBuffer+1))
	if b := c.Buffer(k, 10); cap(b) > maxFreeBuffer {
		t.Fatalf("Buffer handed out a kept %d-byte buffer", cap(b))
	}
}

// Blocks live outside Go's heap: the arena maps memory up to about the
// bound and no further however many blocks stream through, and a cache at
// its bound reads each new block into an evicted one's memory, allocating
// nothing.
func TestArenaHoldsTheBlocks(t *testing.T) {
	const capacity = numShards * 64 << 10
	c := New(capacity)
	limit := int64(capacity) + arenaSlack(capacity)
	for i := 0; i < 20_000; i++ {
		k := Key{1, uint64(i)}
		b := c.Buffer(k, 3000+i%3000) // six size classes
		fill(b, k)
		c.Add(k, b)
	}
	st := c.Stats()
	if st.Mapped == 0 || st.Mapped > limit {
		t.Fatalf("arena mapped %d bytes; want some, at most %d", st.Mapped, limit)
	}
	i := 20_000
	allocs := testing.AllocsPerRun(1000, func() {
		k := Key{1, uint64(i)}
		i++
		b := c.Buffer(k, 3000+i%3000)
		fill(b, k)
		c.Add(k, b)
	})
	if allocs > 0 {
		t.Fatalf("%.1f allocations per block read at the bound; want none", allocs)
	}
	if after := c.Stats().Mapped; after > limit {
		t.Fatalf("arena grew from %d to %d bytes at the bound", st.Mapped, after)
	}
	found := 0
	for j := 0; j < i; j++ {
		k := Key{1, uint64(j)}
		c.Get(k, func(b []byte) {
			found++
			for o := 0; o+8 <= len(b); o += 8 {
				if got := binary.LittleEndian.Uint64(b[o:]); got != k.Table<<32|k.Offset {
					t.Fatalf("block %v holds %x at %d", k, got, o)
				}
			}
		})
	}
	if found == 0 {
		t.Fatal("nothing cached")
	}
}

// A slice of an arena buffer that does not start where a buffer does is
// never handed out again: it would overlap another block.
func TestArenaRefusesInteriorSlices(t *testing.T) {
	c := New(1 << 20)
	b := c.Buffer(Key{}, 2048)
	c.Discard(Key{}, b[8:])
	for i := 0; i < 10; i++ {
		nb := c.Buffer(Key{}, 2040)
		if &nb[:1][0] == &b[8] {
			t.Fatal("an interior slice was handed out as a buffer")
		}
	}
}

// Once the arena is at its bound with no free buffer that fits, blocks are
// read into the heap, and still cached.
func TestArenaFullFallsBackToHeap(t *testing.T) {
	a := newArena(chunkSize)
	if a.get(chunkSize) == nil {
		t.Fatal("the first chunk was not mapped")
	}
	if a.get(512) != nil {
		t.Fatal("the arena carved past its bound")
	}
	if a.put(make([]byte, 512)) {
		t.Fatal("the arena took a heap buffer")
	}
}

// The collector's work on a cache does not grow with its blocks: no heap
// object is made per block (the collector would chase each at every
// cycle), only the shards' table and ring, which grow by doubling.
func TestNoHeapObjectPerBlock(t *testing.T) {
	const blocks = 20_000
	c := New(blocks * 4 << 10)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	addBlocks(t, c, blocks, 2000)
	runtime.ReadMemStats(&after)
	if made := after.Mallocs - before.Mallocs; made > blocks/10 {
		t.Fatalf("%d heap objects made for %d blocks; want far fewer than one per block", made, blocks)
	}
}

// addBlocks adds n blocks of size bytes, spread over 8 tables, and fails
// unless the cache then holds them all.
func addBlocks(tb testing.TB, c *Cache, n, size int) {
	tb.Helper()
	for i := 0; i < n; i++ {
		k := Key{Table: uint64(i % 8), Offset: uint64(i) * 4096}
		c.Add(k, c.Buffer(k, size))
	}
	if got := c.Stats().Blocks; got != n {
		tb.Fatalf("cache holds %d blocks, want %d", got, n)
	}
}
