package table

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/filter"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/util"

	"spangle/storaged/blockcache"
)

// What the writer builds, goleveldb reads with its own table reader and
// bloom filter, in every block shape and with snappy: every key with its
// value, no key that was not written, all in order.
func TestWriterReadByLevelDB(t *testing.T) {
	for _, o := range []BuildOptions{
		{}, {Snappy: true}, {BloomBitsPerKey: -1}, {BlockSize: 256, RestartInterval: 1},
		{BlockSize: 16 << 10, RestartInterval: 16, Snappy: true}, {BloomBitsPerKey: 3, BlockSize: 100},
	} {
		t.Run(fmt.Sprintf("%+v", o), func(t *testing.T) {
			const n = 3000
			dir := buildPartition(t, n, o)
			// Through a block cache, so that the filter is kept.
			tab, err := openTable(onlyTable(t, dir), blockcache.New(1<<20))
			if err != nil {
				t.Fatal(err)
			}
			if hasFilter := tab.filter.data != nil; hasFilter != (o.BloomBitsPerKey >= 0) {
				t.Fatalf("table has a bloom filter: %v", hasFilter)
			}
			tab.close()
			db, err := leveldb.OpenFile(dir, &opt.Options{ReadOnly: true, Filter: filter.NewBloomFilter(10)})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			for i := 0; i < n; i++ {
				got, err := db.Get(fmt.Appendf(nil, "key-%06d", i), nil)
				if err != nil || string(got) != fmt.Sprintf("value-%d", i) {
					t.Fatalf("goleveldb Get(key %d) = %q, %v", i, got, err)
				}
				if _, err := db.Get(fmt.Appendf(nil, "key-%06dx", i), nil); !errors.Is(err, leveldb.ErrNotFound) {
					t.Fatalf("goleveldb found a key never written: %v", err)
				}
			}
			it := db.NewIterator(nil, nil)
			i := 0
			for ; it.Next(); i++ {
				if want := fmt.Sprintf("key-%06d", i); string(it.Key()) != want {
					t.Fatalf("iteration: %q at %d, want %q", it.Key(), i, want)
				}
			}
			it.Release()
			if i != n {
				t.Fatalf("iterated %d keys, want %d", i, n)
			}
		})
	}
}

// The writer's bloom filters are byte for byte goleveldb's.
func TestBloomFilterBytes(t *testing.T) {
	for _, bits := range []int{1, 3, 10, 20} {
		for _, n := range []int{1, 5, 100, 1000} {
			w := newSSTWriter(nil, BuildOptions{BloomBitsPerKey: bits})
			g := filter.NewBloomFilter(bits).NewGenerator()
			for i := 0; i < n; i++ {
				k := fmt.Appendf(nil, "key-%d", i*7)
				w.keyHashes = append(w.keyHashes, bloomHash(k))
				g.Add(k)
			}
			w.generateFilter()
			var want util.Buffer
			g.Generate(&want)
			if !bytes.Equal(w.filter, want.Bytes()) {
				t.Fatalf("%d bits, %d keys: filters differ", bits, n)
			}
		}
	}
}

// fastMod is x % d for every x, d tried, the extremes included.
func TestFastMod(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	ds := []uint32{1, 2, 3, 7, 64, 65, 1000, 80_000, 1<<31 - 1, 1 << 31, 1<<32 - 1}
	for i := 0; i < 50; i++ {
		ds = append(ds, rng.Uint32()|1, uint32(rng.IntN(1<<20))+1)
	}
	for _, d := range ds {
		m := newFastMod(d)
		xs := []uint32{0, 1, d - 1, d, d + 1, 1<<32 - 1, 1<<32 - 2}
		for i := 0; i < 2000; i++ {
			xs = append(xs, rng.Uint32())
		}
		for _, x := range xs {
			if got, want := m.of(x), x%d; got != want {
				t.Fatalf("%d %% %d = %d, fastMod says %d", x, d, want, got)
			}
		}
	}
}

// Keys out of order are refused whatever they share with the previous
// one; equal keys are kept.
func TestWriterOrder(t *testing.T) {
	for _, c := range []struct {
		prev, next string
		ok         bool
	}{
		{"abc", "abd", true}, {"abc", "abc", true}, {"abc", "abcd", true}, {"", "a", true},
		{"abd", "abc", false}, {"abcd", "abc", false}, {"b", "a", false}, {"a", "", false},
		// Past the 8-byte steps of the prefix comparison.
		{"key-0000000123", "key-0000000124", true}, {"key-0000000124", "key-0000000123", false},
		{"key-00000001", "key-000000012", true}, {"key-000000012", "key-00000001", false},
		{"key-1000000000", "key-0000000000", false}, {"0123456789abcdefX", "0123456789abcdefX", true},
	} {
		w := newSSTWriter(nil, BuildOptions{})
		if err := w.add([]byte(c.prev), nil); err != nil {
			t.Fatal(err)
		}
		err := w.add([]byte(c.next), nil)
		if c.ok != (err == nil) || (err != nil && !errors.Is(err, ErrOrder)) {
			t.Fatalf("%q after %q: %v", c.next, c.prev, err)
		}
	}
}

// bloomHash is goleveldb's Hash with the bloom filter's seed, for keys of
// every length around its 4-byte steps.
func TestBloomHash(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for n := 0; n < 40; n++ {
		for i := 0; i < 50; i++ {
			k := make([]byte, n)
			for j := range k {
				k[j] = byte(rng.Uint32())
			}
			if got, want := bloomHash(k), util.Hash(k, 0xbc9f1d34); got != want {
				t.Fatalf("bloomHash(%x) = %08x, goleveldb %08x", k, got, want)
			}
		}
	}
}

// commonPrefix agrees with a byte-by-byte count on every split, with
// later bytes equal or different too (the tail's last 8 bytes overlap
// bytes already compared).
func TestCommonPrefix(t *testing.T) {
	a := []byte("0123456789abcdefghijklmnopq")
	for n := 0; n <= len(a); n++ {
		for d := 0; d <= n; d++ {
			for _, also := range []int{-1, d + 1, n - 1} {
				b := bytes.Clone(a[:n])
				if d < n {
					b[d] ^= 0x40
				}
				if also > d && also < n {
					b[also] ^= 0x01
				}
				if got := commonPrefix(a[:n], b); got != d {
					t.Fatalf("length %d, first difference at %d (and %d): commonPrefix says %d", n, d, also, got)
				}
			}
		}
	}
}
