package table

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"sync/atomic"
	"testing"

	"spangle/storaged/blockcache"
)

// Lookups readied by a Prefetch answer as lookups alone do: found,
// missing and out-of-range keys of a mapped partition of two tables, a
// partition read through the block cache (nothing to ready) and one of
// Snappy blocks (left to Get), and keys repeated in one batch.
func TestPrefetchAnswersAsGet(t *testing.T) {
	for _, c := range []struct {
		name  string
		o     BuildOptions
		cache bool
	}{
		{"mapped plain", BuildOptions{BlockSize: 512}, false},
		{"mapped plain restart 1", BuildOptions{BlockSize: 512, RestartInterval: 1}, false},
		{"mapped snappy", BuildOptions{BlockSize: 512, Snappy: true}, false},
		{"cached", BuildOptions{BlockSize: 512}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := buildPartition(t, 3000, c.o)
			var co CacheOptions
			if c.cache {
				co.Blocks = blockcache.New(1 << 20)
			}
			p, err := OpenPartition(dir, co)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			if !c.cache && !c.o.Snappy && runtime.GOOS == "linux" && p.tables[0].mapped == nil {
				t.Fatal("not mapped")
			}
			rng := rand.New(rand.NewPCG(3, 4))
			var f Prefetch
			readied, fromRun := 0, 0
			for range 50 {
				keys := make([][]byte, 1+rng.IntN(150))
				for i := range keys {
					switch n := rng.IntN(3010) - 5; {
					case i > 0 && rng.IntN(10) == 0:
						keys[i] = keys[i-1] // repeated
					case n%7 == 0:
						keys[i] = fmt.Appendf(nil, "key-%06dx", n) // between two keys
					default:
						keys[i] = fmt.Appendf(nil, "key-%06d", n)
					}
				}
				spots := make([]int, len(keys))
				for i, k := range keys {
					spots[i] = p.AddPrefetch(&f, k)
				}
				readied += f.Len()
				f.Run()
				for i, k := range keys {
					got, ok := f.Get([]byte("dst:"), spots[i])
					var gerr error
					if ok {
						fromRun++
						got = got[len("dst:"):]
					} else {
						got, gerr = p.Get(nil, k)
					}
					want, werr := p.Get(nil, k)
					if string(got) != string(want) || !errors.Is(gerr, werr) && gerr != werr {
						t.Fatalf("key %q: readied %q, %v (from Run: %v); alone %q, %v", k, got, gerr, ok, want, werr)
					}
				}
				f.Reset()
				if f.Len() != 0 {
					t.Fatalf("Len after Reset: %d", f.Len())
				}
			}
			// Only mapped blocks are readied, and only plain ones' values
			// taken from Run.
			if want := !c.cache && runtime.GOOS == "linux"; (readied > 0) != want {
				t.Fatalf("%d keys readied, want some: %v", readied, want)
			}
			if want := !c.cache && !c.o.Snappy && runtime.GOOS == "linux"; (fromRun > 0) != want {
				t.Fatalf("%d values from Run, want some: %v", fromRun, want)
			}
			// Run left the mapping as it found it.
			if m := p.tables[0].sstable; m.mapped != nil && m.users.Load() != 1 {
				t.Fatalf("mapping users after Run: %d, want 1", m.users.Load())
			}
		})
	}
}

// keysOf is the keys "key-%06d" of from <= i < to.
func keysOf(from, to int) [][]byte {
	var keys [][]byte
	for i := from; i < to; i++ {
		keys = append(keys, fmt.Appendf(nil, "key-%06d", i))
	}
	return keys
}

// Run reads nothing of a table closed after its keys were added, and a
// fault reading a mapping cut short under it ends Run quietly: the Get
// reports the block corrupt, as without Run.
func TestPrefetchClosedAndCutShort(t *testing.T) {
	dir := buildPartition(t, 2000, BuildOptions{BlockSize: 512})
	p, err := OpenPartition(dir, CacheOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.tables[0].mapped == nil {
		if runtime.GOOS == "linux" {
			t.Fatal("not mapped")
		}
		return // nothing is readied elsewhere (TestPrefetchAnswersAsGet)
	}
	var f Prefetch
	for _, k := range keysOf(0, 2000) {
		p.AddPrefetch(&f, k)
	}
	p.Close()
	f.Run() // after Close: the mapping is gone, nothing may be read
	f.Reset()

	p, err = OpenPartition(dir, CacheOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	keys := keysOf(1900, 2000)
	for _, k := range keys {
		p.AddPrefetch(&f, k)
	}
	if err := os.Truncate(onlyTable(t, dir), 1000); err != nil {
		t.Fatal(err)
	}
	f.Run()
	f.Reset()
	if _, err := p.Get(nil, keys[len(keys)-1]); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("lookup in a block past the file's end: %v, want ErrCorrupt", err)
	}
	if n := p.tables[0].users.Load(); n != 1 {
		t.Fatalf("mapping users after Run: %d, want 1", n)
	}
}

// Run reads blocks whose checksums no Get has checked yet: bytes flipped
// anywhere in them (restart counts and offsets, entry lengths) make it
// skip them, never read outside the block or panic, and the Gets after
// it report them corrupt.
func TestPrefetchCorruptBlocks(t *testing.T) {
	dir := buildPartition(t, 400, BuildOptions{BlockSize: 512})
	path := onlyTable(t, dir)
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := OpenPartition(dir, CacheOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dataEnd := int(p.tables[0].dataEnd())
	p.Close()
	keys := keysOf(0, 400)
	for at := 0; at < dataEnd; at += 13 {
		b := append([]byte(nil), orig...)
		for i := at; i < min(at+4, dataEnd); i++ {
			b[i] ^= 0xa5
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		p, err := OpenPartition(dir, CacheOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var f Prefetch
		for _, k := range keys {
			p.AddPrefetch(&f, k)
		}
		f.Run()
		f.Reset()
		corrupt := 0
		for _, k := range keys {
			if _, err := p.Get(nil, k); errors.Is(err, ErrCorrupt) {
				corrupt++
			} else if err != nil {
				t.Fatalf("bytes %d-%d flipped: key %q: %v", at, at+3, k, err)
			}
		}
		if corrupt == 0 {
			t.Fatalf("bytes %d-%d flipped: no lookup found its block corrupt", at, at+3)
		}
		p.Close()
	}
}

// FuzzPrefetchBlock: whatever a mapped block holds, the prefetch passes
// and Prefetch.Get read only inside it and never panic, and a value Get
// takes from them is the one seekBlock, a single lookup's search, finds
// in the same bytes.
func FuzzPrefetchBlock(f *testing.F) {
	// Seeds: real blocks of a small table, whole and cut.
	dir := buildPartition(f, 300, BuildOptions{BlockSize: 256})
	p, err := OpenPartition(dir, CacheOptions{Blocks: blockcache.New(0)})
	if err != nil {
		f.Fatal(err)
	}
	tab := p.tables[0].sstable
	for i, bh := range tab.handles[:min(4, len(tab.handles))] {
		buf := make([]byte, bh.size)
		if _, err := tab.f.ReadAt(buf, int64(bh.offset)); err != nil {
			f.Fatal(err)
		}
		f.Add(buf, fmt.Appendf(nil, "key-%06d", i*10))
		f.Add(buf[:len(buf)/2], []byte("key-000003"))
	}
	p.Close()
	f.Add([]byte{0, 0, 0, 0}, []byte("k"))
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0}, []byte("k"))
	f.Fuzz(func(t *testing.T, block, key []byte) {
		if len(block) > 1<<16 {
			return
		}
		// The block as a mapped table holds it: then its type byte
		// (plain) and a checksum, which Run and Get do not read.
		mapped := append(append([]byte(nil), block...), blockPlain, 0, 0, 0, 0)
		tab := &sstable{mapped: mapped, handles: []blockHandle{{0, uint64(len(block))}}, checked: make([]atomic.Bool, 1)}
		tab.users.Store(2) // never unmapped: the mapping is a slice here
		tab.checked[0].Store(true)
		var pf Prefetch
		pf.spots = append(pf.spots, spot{t: tab, i: 0, key: key})
		pf.Run()
		got, ok := pf.Get([]byte("dst:"), 0)
		pf.Reset()
		if !ok {
			return
		}
		v, kind, found, err := seekBlock(block, key)
		if err != nil || !found || kind != keyTypeValue || string(got) != "dst:"+string(v) {
			t.Fatalf("Prefetch.Get %q; seekBlock %q kind %d found %v err %v", got, v, kind, found, err)
		}
	})
}
