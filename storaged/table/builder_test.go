package table

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Runs closed from several goroutines are all in the partition once
// Finish returns, and Sync (fsync on) then succeeds.
func TestSyncedRunsFromGoroutines(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p-0")
	b, err := CreatePartition(dir, BuildOptions{BlockSize: 512})
	if err != nil {
		t.Fatal(err)
	}
	const runs, perRun = 6, 300
	errs := make(chan error, runs)
	for r := 0; r < runs; r++ {
		go func() {
			w, err := b.NewRun()
			if err != nil {
				errs <- err
				return
			}
			for i := 0; i < perRun; i++ {
				if err := w.Append([]byte(fmt.Sprintf("run%d-key%04d", r, i)), []byte(fmt.Sprint(r*perRun+i))); err != nil {
					errs <- err
					return
				}
			}
			errs <- w.Close()
		}()
	}
	for r := 0; r < runs; r++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Finish(); err != nil {
		t.Fatal(err)
	}
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	p, err := OpenPartition(dir, CacheOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for r := 0; r < runs; r++ {
		for i := 0; i < perRun; i += 37 {
			got, err := p.Get(nil, []byte(fmt.Sprintf("run%d-key%04d", r, i)))
			if err != nil || string(got) != fmt.Sprint(r*perRun+i) {
				t.Fatalf("run %d key %d: %q, %v", r, i, got, err)
			}
		}
	}
}

// Tables of any block shape answer every key and refuse the keys between
// them, whatever the restart interval puts whole keys on.
func TestBlockShapes(t *testing.T) {
	for _, o := range []BuildOptions{{}, {RestartInterval: 1}, {BlockSize: 16 << 10, RestartInterval: 16}, {BlockSize: 256, RestartInterval: 3}} {
		dir := filepath.Join(t.TempDir(), "p-0")
		b, err := CreatePartition(dir, BuildOptions{BlockSize: o.BlockSize, RestartInterval: o.RestartInterval, NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		w, err := b.NewRun()
		if err != nil {
			t.Fatal(err)
		}
		const n = 3000
		for i := 0; i < n; i++ {
			if err := w.Append(fmt.Appendf(nil, "key-%06d", 2*i), fmt.Appendf(nil, "value-%d", i)); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if err := b.Finish(); err != nil {
			t.Fatal(err)
		}
		p, err := OpenPartition(dir, CacheOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i++ {
			got, err := p.Get(nil, fmt.Appendf(nil, "key-%06d", 2*i))
			if err != nil || string(got) != fmt.Sprintf("value-%d", i) {
				t.Fatalf("%+v: key %d: %q, %v", o, 2*i, got, err)
			}
			if _, err := p.Get(nil, fmt.Appendf(nil, "key-%06d", 2*i+1)); !errors.Is(err, ErrNotFound) {
				t.Fatalf("%+v: key %d between keys: %v", o, 2*i+1, err)
			}
		}
		p.Close()
	}
}

// A table bigger than a reservation step ends at its footer, with no
// reserved space left past it, and reads back.
func TestPreallocatedTable(t *testing.T) {
	val := bytes.Repeat([]byte("v"), 200)
	dir := filepath.Join(t.TempDir(), "p-0")
	b, err := CreatePartition(dir, BuildOptions{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	w, err := b.NewRun()
	if err != nil {
		t.Fatal(err)
	}
	const n = 3 * preallocStep / 200
	for i := 0; i < n; i++ {
		if err := w.Append(fmt.Appendf(nil, "key-%08d", i), val); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Finish(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(onlyTable(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	if size := b.tables[0].size; fi.Size() != int64(size) {
		t.Fatalf("table file of %d bytes, %d written", fi.Size(), size)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Blocks*512 > fi.Size()+preallocStep/2 {
		t.Fatalf("%d bytes of disk held for a %d-byte table", st.Blocks*512, fi.Size())
	}
	p, err := OpenPartition(dir, CacheOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, i := range []int{0, n / 2, n - 1} {
		if v, err := p.Get(nil, fmt.Appendf(nil, "key-%08d", i)); err != nil || !bytes.Equal(v, val) {
			t.Fatalf("key %d: %v", i, err)
		}
	}
}
