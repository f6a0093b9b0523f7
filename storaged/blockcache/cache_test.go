package blockcache

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
)

func block(n int, b byte) []byte { return bytes.Repeat([]byte{b}, n) }

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
		if b, ok := c.Get(Key{1, uint64(i)}); ok {
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
	if _, ok := c.Get(Key{2, 0}); ok {
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
		if _, ok := c.Get(hot); !ok {
			t.Fatalf("the hot block was evicted after %d cold adds", i)
		}
		c.Add(Key{1, uint64(i)}, block(1000, 2))
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
		if _, ok := c.Get(Key{a, uint64(i)}); ok {
			t.Fatalf("block %d of a dropped table is still cached", i)
		}
		if _, ok := c.Get(Key{b, uint64(i)}); !ok {
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
	if _, ok := c.Get(Key{1, 1}); ok {
		t.Fatal("a nil cache answered")
	}
	c.DropTable(c.NewTableID())
	if st := c.Stats(); st != (Stats{}) {
		t.Fatalf("stats of a nil cache: %+v", st)
	}
}

// Readers, writers and drops at once (run with -race): every hit is the
// block added under its key.
func TestConcurrent(t *testing.T) {
	c := New(numShards * 8_000)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 5000; i++ {
				k := Key{uint64(i % 3), uint64((i * 7919) % 997)}
				if b, ok := c.Get(k); ok {
					if want := fmt.Sprint(k); string(b) != want {
						t.Errorf("Get(%v) = %q", k, b)
						return
					}
					continue
				}
				c.Add(k, []byte(fmt.Sprint(k)))
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
