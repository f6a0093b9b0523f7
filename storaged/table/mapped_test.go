package table

import (
	"errors"
	"fmt"
	"runtime"
	"testing"

	"spangle/storaged/blockcache"
)

// A partition without a block cache reads its blocks in place from the
// mapped file, and answers as one reading through a cache does: values,
// missing keys, keys outside the tables' ranges.
func TestMappedMatchesCached(t *testing.T) {
	dir := buildPartition(t, 3000, BuildOptions{BlockSize: 512})
	mapped, err := OpenPartition(dir, CacheOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer mapped.Close()
	if m := mapped.tables[0].mapped; m == nil && runtime.GOOS == "linux" {
		t.Fatal("partition without a block cache not mapped")
	}
	cached, err := OpenPartition(dir, CacheOptions{Blocks: blockcache.New(1 << 20)})
	if err != nil {
		t.Fatal(err)
	}
	defer cached.Close()
	if cached.tables[0].mapped != nil {
		t.Fatal("partition with a block cache mapped too")
	}
	for i := -5; i < 3010; i++ {
		key := fmt.Appendf(nil, "key-%06d", i)
		if i%7 == 0 {
			key = append(key, 'x') // between two keys
		}
		v1, err1 := mapped.Get(nil, key)
		v2, err2 := cached.Get(nil, key)
		if string(v1) != string(v2) || !errors.Is(err1, err2) && err1 != err2 {
			t.Fatalf("key %q: mapped %q, %v; cached %q, %v", key, v1, err1, v2, err2)
		}
	}
}

// A bad block stays bad: its checksum is checked until it passes, so the
// second lookup of it is ErrCorrupt too.
func TestMappedCorruptBlockEveryLookup(t *testing.T) {
	dir := buildPartition(t, 2000, BuildOptions{BlockSize: 512})
	path := onlyTable(t, dir)
	flip(t, path, 100) // inside the first data block
	p, err := OpenPartition(dir, CacheOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for range 2 {
		if _, err := p.Get(nil, []byte("key-000000")); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("lookup in the bad block: %v, want ErrCorrupt", err)
		}
	}
}

// A lookup that comes after Close, which callers are to prevent, gets an
// error, never a read of unmapped memory.
func TestMappedLookupAfterClose(t *testing.T) {
	dir := buildPartition(t, 100, BuildOptions{})
	p, err := OpenPartition(dir, CacheOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tables := p.tables
	p.Close()
	// Elsewhere than on Linux tables are not mapped: the closed file
	// answers an error of its own.
	_, _, _, err = tables[0].get(nil, []byte("key-000001"))
	if err == nil || runtime.GOOS == "linux" && !errors.Is(err, errClosed) {
		t.Fatalf("lookup after close: %v, want errClosed", err)
	}
}

// A mapped table of plain blocks never asks its bloom filter, so it does
// not keep it on the heap; one read through a cache, or of Snappy blocks,
// does. Either way the filter block is checked as the table opens (the
// scrub relies on it), and missing keys are still not found.
func TestMappedKeepsNoFilter(t *testing.T) {
	for _, c := range []struct {
		name       string
		o          BuildOptions
		cache      bool
		wantFilter bool
	}{
		{"mapped plain", BuildOptions{BlockSize: 512}, false, false},
		{"mapped snappy", BuildOptions{BlockSize: 512, Snappy: true}, false, true},
		{"cached plain", BuildOptions{BlockSize: 512}, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := buildPartition(t, 2000, c.o)
			var co CacheOptions
			if c.cache {
				co.Blocks = blockcache.New(1 << 20)
			}
			p, err := OpenPartition(dir, co)
			if err != nil {
				t.Fatal(err)
			}
			tab := p.tables[0]
			if tab.mapped == nil && runtime.GOOS == "linux" && !c.cache {
				t.Fatal("not mapped")
			}
			// A file that could not be mapped is read with pread, filter and all.
			if got := tab.filter.data != nil; got != (c.wantFilter || tab.mapped == nil) {
				t.Fatalf("filter kept: %v, want %v", got, c.wantFilter)
			}
			for i := range 2000 {
				if _, err := p.Get(nil, fmt.Appendf(nil, "key-%06dx", i)); !errors.Is(err, ErrNotFound) {
					t.Fatalf("missing key %d: %v, want ErrNotFound", i, err)
				}
			}
			filterAt := int(tab.dataEnd()) + 1
			p.Close()
			flip(t, onlyTable(t, dir), filterAt)
			if p, err := OpenPartition(dir, co); !errors.Is(err, ErrCorrupt) {
				if err == nil {
					p.Close()
				}
				t.Fatalf("opening with a bad filter block: %v, want ErrCorrupt", err)
			}
		})
	}
}
