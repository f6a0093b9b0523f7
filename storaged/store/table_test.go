package store

import (
	"fmt"
	"path/filepath"
	"testing"
)

// Runs closed from several goroutines with fsync on (synced in the
// background) are all in the partition once Finish returns.
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
	p, err := OpenPartition(dir, CacheOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for r := 0; r < runs; r++ {
		for i := 0; i < perRun; i += 37 {
			got, err := p.Get([]byte(fmt.Sprintf("run%d-key%04d", r, i)))
			if err != nil || string(got) != fmt.Sprint(r*perRun+i) {
				t.Fatalf("run %d key %d: %q, %v", r, i, got, err)
			}
		}
	}
}
