package table

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/opt"

	"spangle/storaged/blockcache"
)

// goLevelDB writes a database through goleveldb's ordinary write path
// (journal, memtable, compactions, snappy blocks): values overwritten and
// deleted after a compaction pushed the first ones down a level, so
// level-0 tables shadow deeper ones. It returns the keys it ever wrote.
// The database is closed and reopened once, which flushes the journal into
// a table and leaves it empty.
func goLevelDB(t testing.TB, dir string) []string {
	t.Helper()
	o := &opt.Options{WriteBuffer: 32 << 10, BlockSize: 1 << 10, CompactionL0Trigger: 8, Filter: nil}
	db, err := leveldb.OpenFile(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 7))
	var keys []string
	put := func(k string) {
		v := strings.Repeat(fmt.Sprint(rng.IntN(1000)), rng.IntN(20))
		if err := db.Put([]byte(k), []byte(v), nil); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 3000; i++ {
		k := fmt.Sprintf("key-%05d", rng.IntN(100000))
		keys = append(keys, k)
		put(k)
	}
	if err := db.CompactRange(struct{ Start, Limit []byte }{}); err != nil {
		t.Fatal(err)
	}
	for i, k := range keys[:1500] {
		if i%3 == 0 {
			if err := db.Delete([]byte(k), nil); err != nil {
				t.Fatal(err)
			}
		} else {
			put(k)
		}
	}
	db.Put(nil, []byte("the empty key"), nil)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if db, err = leveldb.OpenFile(dir, o); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return append(keys, "", "key-", "key-99999x", "zzz")
}

// A database that goleveldb wrote its own way reads back as goleveldb
// reads it: newest values, deletions hiding older values, missing keys.
func TestReadsWhatLevelDBWrote(t *testing.T) {
	dir := t.TempDir()
	keys := goLevelDB(t, dir)
	refs, err := readDescriptor(dir)
	if err != nil {
		t.Fatal(err)
	}
	levels := map[int]int{}
	for _, r := range refs {
		levels[r.level]++
	}
	if levels[0] < 2 || len(levels) < 2 {
		t.Fatalf("want tables at level 0 and deeper to test shadowing, got %v", levels)
	}
	db, err := leveldb.OpenFile(dir, &opt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, cache := range []*blockcache.Cache{nil, blockcache.New(64 << 10)} {
		p, err := OpenPartition(dir, CacheOptions{Blocks: cache})
		if err != nil {
			t.Fatal(err)
		}
		var found, missing int
		for pass := 0; pass < 2; pass++ {
			for _, k := range keys {
				want, werr := db.Get([]byte(k), nil)
				got, gerr := p.Get(nil, []byte(k))
				if errors.Is(werr, leveldb.ErrNotFound) {
					missing++
					if !errors.Is(gerr, ErrNotFound) {
						t.Fatalf("Get(%q) = %q, %v; goleveldb finds nothing", k, got, gerr)
					}
					continue
				}
				found++
				if werr != nil || gerr != nil || !bytes.Equal(got, want) {
					t.Fatalf("Get(%q) = %q, %v; goleveldb: %q, %v", k, got, gerr, want, werr)
				}
			}
		}
		if found == 0 || missing < 500 {
			t.Fatalf("%d found, %d missing: the test lost its deletions", found, missing)
		}
		p.Close()
	}
}

// Records still in the journal are in no table: a database holding them
// is refused, not served without them.
func TestRefusesUnflushedJournal(t *testing.T) {
	dir := t.TempDir()
	db, err := leveldb.OpenFile(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Put([]byte("k"), []byte("v"), nil)
	db.Close()
	_, err = OpenPartition(dir, CacheOptions{})
	if err == nil || !strings.Contains(err.Error(), "journal") {
		t.Fatalf("OpenPartition = %v, want an error about the journal", err)
	}
}

// buildPartition writes n keys "key-%06d" with values "value-%d" into one
// run and returns the partition's directory.
func buildPartition(t testing.TB, n int, o BuildOptions) string {
	t.Helper()
	return writePartition(t, n, o, func(i int) ([]byte, []byte) {
		return fmt.Appendf(nil, "key-%06d", i), fmt.Appendf(nil, "value-%d", i)
	})
}

// writePartition builds a partition (without fsync) of the n records
// kv gives, in the order of i, and returns its directory.
func writePartition(t testing.TB, n int, o BuildOptions, kv func(i int) (key, value []byte)) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "p-0")
	o.NoSync = true
	b, err := CreatePartition(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	w, err := b.NewRun()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if err := w.Append(kv(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Finish(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func onlyTable(t testing.TB, dir string) string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*.ldb"))
	if err != nil || len(m) != 1 {
		t.Fatalf("tables in %s: %v, %v", dir, m, err)
	}
	return m[0]
}

// A flipped bit in a data block fails the lookups that read that block
// with ErrCorrupt, never a wrong value, and leaves the other blocks
// readable; a flipped or truncated footer or index fails the open.
func TestCorruptTable(t *testing.T) {
	for _, snappy := range []bool{false, true} {
		dir := buildPartition(t, 2000, BuildOptions{BlockSize: 512, Snappy: snappy})
		path := onlyTable(t, dir)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		data[100] ^= 0x10 // inside the first data block
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		p, err := OpenPartition(dir, CacheOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var corrupt, good int
		for i := 0; i < 2000; i++ {
			v, err := p.Get(nil, fmt.Appendf(nil, "key-%06d", i))
			switch {
			case errors.Is(err, ErrCorrupt):
				corrupt++
			case err != nil:
				t.Fatalf("key %d: %v", i, err)
			case string(v) != fmt.Sprintf("value-%d", i):
				t.Fatalf("key %d: wrong value %q", i, v)
			default:
				good++
			}
		}
		if corrupt == 0 || good < 1900 {
			t.Fatalf("snappy %v: %d corrupt and %d good lookups", snappy, corrupt, good)
		}
		p.Close()

		for _, cut := range []int{len(data) - 1, len(data) - footerLen/2, 10} {
			if err := os.WriteFile(path, data[:cut], 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := OpenPartition(dir, CacheOptions{}); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("table cut to %d bytes: OpenPartition = %v, want ErrCorrupt", cut, err)
			}
		}
	}
}

// A partition whose descriptor names a table that is gone does not open.
func TestMissingTable(t *testing.T) {
	dir := buildPartition(t, 10, BuildOptions{})
	os.Remove(onlyTable(t, dir))
	if _, err := OpenPartition(dir, CacheOptions{}); err == nil {
		t.Fatal("opened a partition whose table is gone")
	}
}

// Lookups allocate nothing when the block is cached.
func TestGetAllocations(t *testing.T) {
	dir := buildPartition(t, 5000, BuildOptions{})
	p, err := OpenPartition(dir, CacheOptions{Blocks: blockcache.New(1 << 20)})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	key := []byte("key-001234")
	miss := []byte("key-001234x")
	dst := make([]byte, 0, 64)
	p.Get(dst, key)
	allocs := testing.AllocsPerRun(100, func() {
		if v, err := p.Get(dst[:0], key); err != nil || string(v) != "value-1234" {
			t.Fatal(v, err)
		}
		if _, err := p.Get(dst[:0], miss); !errors.Is(err, ErrNotFound) {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per cached lookup", allocs)
	}
}
