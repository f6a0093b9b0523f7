package table

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// A table written at once, shorter than flushAt, reserves nothing; one
// written in steps reserves preallocStep ahead from its first write and
// ends at its last byte.
func TestPreallocFollowsWrites(t *testing.T) {
	create := func(name string) (*preallocFile, *os.File) {
		f, err := os.Create(filepath.Join(t.TempDir(), name))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return &preallocFile{f: f}, f
	}
	size := func(f *os.File) int64 {
		fi, err := f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}

	small, f := create("small.ldb")
	for i := 0; i < 2; i++ { // finish's write, then the footer's
		if _, err := small.Write(bytes.Repeat([]byte("s"), 2<<10)); err != nil {
			t.Fatal(err)
		}
	}
	if small.reserved != 0 || size(f) != 4<<10 {
		t.Fatalf("a 4 KiB table: %d bytes reserved, file of %d bytes", small.reserved, size(f))
	}
	if err := small.finish(); err != nil || size(f) != 4<<10 {
		t.Fatalf("finish: %v, file of %d bytes", err, size(f))
	}

	big, f := create("big.ldb")
	chunk := bytes.Repeat([]byte("b"), flushAt)
	const writes = 40 // 10 MiB, past one preallocStep
	for i := 0; i < writes; i++ {
		if _, err := big.Write(chunk); err != nil {
			t.Fatal(err)
		}
		if runtime.GOOS != "linux" {
			continue
		}
		if big.noPrealloc || big.reserved < big.off || big.reserved > big.off+preallocStep {
			t.Fatalf("write %d: %d bytes reserved for %d written (gave up: %v)", i, big.reserved, big.off, big.noPrealloc)
		}
		if size(f) != big.reserved {
			t.Fatalf("write %d: file of %d bytes, %d reserved", i, size(f), big.reserved)
		}
	}
	if err := big.finish(); err != nil || size(f) != writes*int64(len(chunk)) {
		t.Fatalf("finish: %v, file of %d bytes, %d written", err, size(f), writes*len(chunk))
	}
}
