package table

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"spangle/storaged/blockcache"
)

// buildTwoRuns builds, without finishing the partition's files' sync, a
// partition of two runs of small blocks (even keys in one, odd in the
// other) of n keys in all, and returns its builder.
func buildTwoRuns(t *testing.T, n int, o BuildOptions) *PartitionBuilder {
	t.Helper()
	o.NoSync = true
	o.BlockSize = 512
	b, err := CreatePartition(filepath.Join(t.TempDir(), "p-0"), o)
	if err != nil {
		t.Fatal(err)
	}
	for run := range 2 {
		w, err := b.NewRun()
		if err != nil {
			t.Fatal(err)
		}
		for i := run; i < n; i += 2 {
			if err := w.Append(fmt.Appendf(nil, "key-%06d", i), fmt.Appendf(nil, "value-%d", i)); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Finish(); err != nil {
		t.Fatal(err)
	}
	return b
}

// A partition opened from what its writers kept holds the same index and
// filter as one opened from its files, and answers every key, present or
// not, the same.
func TestOpenWrittenMatchesOpenFromDisk(t *testing.T) {
	const n = 5000
	for _, snappy := range []bool{false, true} {
		for _, cached := range []bool{false, true} {
			t.Run(fmt.Sprintf("snappy-%v/cache-%v", snappy, cached), func(t *testing.T) {
				b := buildTwoRuns(t, n, BuildOptions{Snappy: snappy})
				var o CacheOptions
				if cached {
					o.Blocks = blockcache.New(1 << 20)
				}
				mem, err := b.Open(o)
				if err != nil {
					t.Fatal(err)
				}
				defer mem.Close()
				disk, err := OpenPartition(b.dir, o)
				if err != nil {
					t.Fatal(err)
				}
				defer disk.Close()
				if len(mem.tables) != 2 || len(disk.tables) != 2 {
					t.Fatalf("tables: %d from the writers, %d from disk; want 2", len(mem.tables), len(disk.tables))
				}
				for i := range mem.tables {
					m, d := mem.tables[i], disk.tables[i]
					if m.size != d.size || !reflect.DeepEqual(m.smallest, d.smallest) || !reflect.DeepEqual(m.largest, d.largest) {
						t.Errorf("table %d: size %d, keys %q-%q from the writers; %d, %q-%q from disk", i, m.size, m.smallest, m.largest, d.size, d.smallest, d.largest)
					}
					if !reflect.DeepEqual(m.seps, d.seps) || !reflect.DeepEqual(m.sepEnd, d.sepEnd) || !reflect.DeepEqual(m.handles, d.handles) ||
						!reflect.DeepEqual(m.sepCommon, d.sepCommon) || !reflect.DeepEqual(m.sepPrefix, d.sepPrefix) {
						t.Errorf("table %d: the writers' index differs from the one read back", i)
					}
					if !reflect.DeepEqual(m.filter.data, d.filter.data) || m.filter.offsets != d.filter.offsets || m.filter.num != d.filter.num || m.filter.baseLg != d.filter.baseLg {
						t.Errorf("table %d: the writers' filter differs from the one read back", i)
					}
					if (m.mapped == nil) != (d.mapped == nil) {
						t.Errorf("table %d: mapped %v from the writers, %v from disk", i, m.mapped != nil, d.mapped != nil)
					}
				}
				for i := range n + 100 {
					key := fmt.Appendf(nil, "key-%06d", i)
					mv, merr := mem.Get(nil, key)
					dv, derr := disk.Get(nil, key)
					if string(mv) != string(dv) || !errors.Is(merr, derr) && merr != derr {
						t.Fatalf("Get %s: %q, %v from the writers; %q, %v from disk", key, mv, merr, dv, derr)
					}
					if want := fmt.Sprintf("value-%d", i); i < n && string(mv) != want {
						t.Fatalf("Get %s: %q, %v; want %q", key, mv, merr, want)
					}
				}
			})
		}
	}
}

// What the writers kept is handed to one open only: a partition whose
// index is damaged on disk after it was built opens from the writers'
// index once, and every open after that reads the files and fails as
// it would at a restart.
func TestOpenWrittenOnceThenFromDisk(t *testing.T) {
	b := buildTwoRuns(t, 2000, BuildOptions{Snappy: true})
	for _, ti := range b.tables {
		path := tableFile(b.dir, ti.num)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		data[len(data)-footerLen-blockTrailerLen-3] ^= 0x10 // in the index block
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p, err := b.Open(CacheOptions{})
	if err != nil {
		t.Fatalf("first open, from the writers: %v", err)
	}
	if v, err := p.Get(nil, []byte("key-001999")); err != nil || string(v) != "value-1999" {
		t.Errorf("Get: %q, %v", v, err)
	}
	p.Close()
	if _, err := b.Open(CacheOptions{}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("second open: %v, want ErrCorrupt", err)
	}
	if _, err := OpenPartition(b.dir, CacheOptions{}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("open from disk: %v, want ErrCorrupt", err)
	}
}

// The first run creates the descriptor and CURRENT, which Finish (on a
// load's serial end) then only writes; until it has, the partition does
// not open.
func TestFinishWritesFilesTheFirstRunCreated(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p-0")
	b, err := CreatePartition(dir, BuildOptions{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	w, err := b.NewRun()
	if err != nil {
		t.Fatal(err)
	}
	var before []os.FileInfo
	for _, name := range []string{descriptorName, "CURRENT"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("after the first run began: %v", err)
		}
		before = append(before, fi)
	}
	if err := w.Append([]byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if p, err := OpenPartition(dir, CacheOptions{}); !errors.Is(err, ErrCorrupt) {
		if p != nil {
			p.Close()
		}
		t.Fatalf("open before Finish: %v, want ErrCorrupt", err)
	}
	if err := b.Finish(); err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{descriptorName, "CURRENT"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || !os.SameFile(before[i], fi) || fi.Size() == 0 {
			t.Errorf("%s after Finish: %v, same file %v; want the file the run created, written", name, err, err == nil && os.SameFile(before[i], fi))
		}
	}
	p, err := OpenPartition(dir, CacheOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if v, err := p.Get(nil, []byte("k")); err != nil || string(v) != "v" {
		t.Errorf("Get: %q, %v", v, err)
	}
}

// A writer's index grows in memory the next writer reuses: the index a
// finished run keeps is its own, whatever the runs written after it, of
// more blocks or fewer.
func TestOpenWrittenIndexOfEachRun(t *testing.T) {
	b, err := CreatePartition(filepath.Join(t.TempDir(), "p-0"), BuildOptions{NoSync: true, BlockSize: 256})
	if err != nil {
		t.Fatal(err)
	}
	sizes := []int{3000, 200, 5000, 1}
	for run, n := range sizes {
		w, err := b.NewRun()
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if err := w.Append(fmt.Appendf(nil, "r%d-key-%06d", run, i), fmt.Appendf(nil, "value-%d-%d", run, i)); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Finish(); err != nil {
		t.Fatal(err)
	}
	mem, err := b.Open(CacheOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	disk, err := OpenPartition(b.dir, CacheOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer disk.Close()
	if len(mem.tables) != len(sizes) || len(disk.tables) != len(sizes) {
		t.Fatalf("tables: %d from the writers, %d from disk; want %d", len(mem.tables), len(disk.tables), len(sizes))
	}
	for i := range mem.tables {
		m, d := mem.tables[i], disk.tables[i]
		if !reflect.DeepEqual(m.seps, d.seps) || !reflect.DeepEqual(m.sepEnd, d.sepEnd) || !reflect.DeepEqual(m.handles, d.handles) {
			t.Errorf("table %d: the writers' index (%d blocks) differs from the one read back (%d)", i, len(m.handles), len(d.handles))
		}
	}
	for run, n := range sizes {
		for i := 0; i < n; i += 97 {
			key := fmt.Appendf(nil, "r%d-key-%06d", run, i)
			if v, err := mem.Get(nil, key); err != nil || string(v) != fmt.Sprintf("value-%d-%d", run, i) {
				t.Fatalf("Get %s: %q, %v", key, v, err)
			}
		}
	}
}
