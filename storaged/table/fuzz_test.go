package table

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"spangle/storaged/blockcache"
)

// FuzzSeekBlock: any bytes as a block and any key give an answer or an
// error, never a panic, and a value found lies inside the block; the
// block's cached form (with its digest) answers the same.
func FuzzSeekBlock(f *testing.F) {
	dir := buildPartition(f, 40, BuildOptions{BlockSize: 256})
	data, err := os.ReadFile(onlyTable(f, dir))
	if err != nil {
		f.Fatal(err)
	}
	t, err := openTable(onlyTable(f, dir), nil)
	if err != nil {
		f.Fatal(err)
	}
	bh := t.handles[0]
	t.close()
	f.Add(data[bh.offset:bh.offset+bh.size], []byte("key-000003"))
	f.Add(data[bh.offset:bh.offset+bh.size], []byte("key-0000031"))
	f.Add([]byte{0, 0, 0, 0}, []byte("k"))
	f.Add(rawBlock("aaaa", "ab", "aaaz"), []byte("ab"))
	f.Add([]byte{0, 1, 5, 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l', 'm', 0, 0, 0, 0, 1, 0, 0, 0}, []byte("abcde"))
	f.Fuzz(func(t *testing.T, block, key []byte) {
		value, kind, found, err := seekBlock(block, key)
		v2, k2, f2, e2 := seekCached(cachedForm(block), key)
		if !bytes.Equal(value, v2) || kind != k2 || found != f2 || (err == nil) != (e2 == nil) {
			t.Fatalf("key %q: seekBlock (%q %d %v %v), seekCached (%q %d %v %v)", key, value, kind, found, err, v2, k2, f2, e2)
		}
		if err != nil || !found || len(value) == 0 {
			return
		}
		if !bytes.Contains(block, value) {
			t.Fatalf("value %q is not from the block", value)
		}
	})
}

// FuzzOpenPartition: a table file with any bytes changed opens with an
// error or answers lookups with values or errors, never a panic.
func FuzzOpenPartition(f *testing.F) {
	dir := buildPartition(f, 200, BuildOptions{BlockSize: 256})
	path := onlyTable(f, dir)
	data, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(uint16(100), byte(1), uint16(len(data)))
	f.Add(uint16(len(data)-10), byte(0x80), uint16(len(data)))
	f.Add(uint16(len(data)-footerLen+1), byte(0xff), uint16(len(data)))
	f.Add(uint16(0), byte(0), uint16(len(data)-3))
	// One small block cache for every input, as a node has one: corrupt
	// tables' buffers go back to it, and must not spoil the next input's
	// blocks.
	blocks := blockcache.New(64 << 10)
	f.Fuzz(func(t *testing.T, at uint16, flip byte, size uint16) {
		d := bytes.Clone(data)
		if int(at) < len(d) {
			d[at] ^= flip
		}
		if int(size) < len(d) {
			d = d[:size]
		}
		tdir := filepath.Join(t.TempDir(), "p")
		if err := os.CopyFS(tdir, os.DirFS(dir)); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tdir, filepath.Base(path)), d, 0o644); err != nil {
			t.Fatal(err)
		}
		p, err := OpenPartition(tdir, CacheOptions{Blocks: blocks})
		if err != nil {
			return
		}
		defer p.Close()
		keys := []string{"key-000000", "key-000150", "key-000199", "key-0001", "zzz"}
		for _, k := range keys {
			p.Get(nil, []byte(k))
		}
		// The same table without a cache, its blocks read in place from
		// the mapped file.
		if m, err := OpenPartition(tdir, CacheOptions{}); err == nil {
			for _, k := range keys {
				m.Get(nil, []byte(k))
			}
			m.Close()
		}
		// The intact table, read through the same cache, still answers
		// every key right.
		good, err := OpenPartition(dir, CacheOptions{Blocks: blocks})
		if err != nil {
			t.Fatal(err)
		}
		defer good.Close()
		for _, i := range []int{0, 77, 150, 199} {
			k := fmt.Sprintf("key-%06d", i)
			if v, err := good.Get(nil, []byte(k)); err != nil || string(v) != fmt.Sprintf("value-%d", i) {
				t.Fatalf("intact table: %s = %q, %v", k, v, err)
			}
		}
	})
}
