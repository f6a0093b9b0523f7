package table

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// A table written at once reserves nothing; one written in steps
// reserves ahead, never more than it has written, and ends at its last
// byte.
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
	if _, err := small.Write(bytes.Repeat([]byte("s"), 4<<10)); err != nil {
		t.Fatal(err)
	}
	if small.reserved != 0 || size(f) != 4<<10 {
		t.Fatalf("one 4 KiB write: %d bytes reserved, file of %d bytes", small.reserved, size(f))
	}
	if err := small.finish(); err != nil || size(f) != 4<<10 {
		t.Fatalf("finish: %v, file of %d bytes", err, size(f))
	}

	big, f := create("big.ldb")
	chunk := bytes.Repeat([]byte("b"), 256<<10)
	for i := 0; i < 40; i++ { // 10 MiB, past one preallocStep
		before := big.off
		if _, err := big.Write(chunk); err != nil {
			t.Fatal(err)
		}
		if i == 0 && big.reserved != 0 {
			t.Fatalf("the first write reserved %d bytes", big.reserved)
		}
		if ahead := big.reserved - big.off; ahead > min(before, preallocStep) {
			t.Fatalf("write %d: %d bytes reserved past %d written", i, ahead, big.off)
		}
		if runtime.GOOS == "linux" && i > 0 {
			if big.noPrealloc {
				t.Fatal("fallocate refused on linux")
			}
			if size(f) != big.reserved {
				t.Fatalf("write %d: file of %d bytes, %d reserved", i, size(f), big.reserved)
			}
		}
	}
	if err := big.finish(); err != nil || size(f) != 40*int64(len(chunk)) {
		t.Fatalf("finish: %v, file of %d bytes, %d written", err, size(f), 40*len(chunk))
	}
}
