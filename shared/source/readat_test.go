package source

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
)

// A local data file read through ReadAt gives the bytes at any offset,
// in parallel calls too, reads longer than maxRead whole, stops at the
// size it had when opened (io.EOF), and fails with ErrChanged once it is
// shorter than that.
func TestLocalFileReadAt(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	path := root + "/db/1/part-00000.parquet"
	data := make([]byte, 2*maxRead+12345)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	write(t, path, string(data))
	src, err := Open(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	open := func(ctx context.Context) io.ReaderAt {
		rc, err := src.Open(ctx, "db", "1", "part-00000.parquet")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rc.Close() })
		ra, ok := rc.(io.ReaderAt)
		if !ok {
			t.Fatalf("%T has no ReadAt", rc)
		}
		if s, ok := rc.(interface{ Size() int64 }); !ok || s.Size() != int64(len(data)) {
			t.Fatalf("%T: no Size, or not %d", rc, len(data))
		}
		return ra
	}
	ra := open(ctx)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			for range 50 {
				off := rng.IntN(len(data))
				n := rng.IntN(min(len(data)-off, 3*maxRead) + 1)
				if g == 0 {
					n = min(len(data)-off, maxRead+rng.IntN(maxRead)) // across maxRead
				}
				b := make([]byte, n)
				if got, err := ra.ReadAt(b, int64(off)); got != n || err != nil || !bytes.Equal(b, data[off:off+n]) {
					errs <- errors.New("a read in the file gave other bytes, or an error")
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	// Past the end: what there is, then io.EOF.
	b := make([]byte, 100)
	if got, err := ra.ReadAt(b, int64(len(data)-40)); got != 40 || err != io.EOF || !bytes.Equal(b[:40], data[len(data)-40:]) {
		t.Fatalf("read over the end: %d, %v; want 40, io.EOF", got, err)
	}
	if got, err := ra.ReadAt(b, int64(len(data))); got != 0 || err != io.EOF {
		t.Fatalf("read at the end: %d, %v; want 0, io.EOF", got, err)
	}
	if _, err := ra.ReadAt(b, -1); err == nil {
		t.Fatal("read at -1: no error")
	}

	// Grown after the open: read to the size seen only.
	ra = open(ctx)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("more")
	f.Close()
	if got, err := ra.ReadAt(b, int64(len(data)-10)); got != 10 || err != io.EOF {
		t.Fatalf("a file that grew, read at its old end: %d, %v; want 10, io.EOF", got, err)
	}

	// Shrunk after the open: a read short of the size seen fails.
	write(t, path, string(data))
	ra = open(ctx)
	if err := os.Truncate(path, 1000); err != nil {
		t.Fatal(err)
	}
	if got, err := ra.ReadAt(b, 950); !errors.Is(err, ErrChanged) || got != 50 {
		t.Fatalf("a file that shrank: %d, %v; want 50, ErrChanged", got, err)
	}
	if got, err := ra.ReadAt(b, 2000); !errors.Is(err, ErrChanged) || got != 0 {
		t.Fatalf("a file that shrank, read past its new end: %d, %v; want 0, ErrChanged", got, err)
	}

	// A read given up on (the context ended) fails, and so does every
	// ReadAt after it.
	write(t, path, string(data))
	cctx, cancel := context.WithCancel(ctx)
	ra = open(cctx)
	cancel()
	// The read may win the race with the context's end: it is the
	// reads after the first given up on that must all fail.
	for i := 0; ; i++ {
		_, err := ra.ReadAt(b, 0)
		if errors.Is(err, context.Canceled) {
			break
		}
		if err != nil || i == 1000 {
			t.Fatalf("cancelled: %v after %d reads", err, i)
		}
	}
	if _, err := ra.ReadAt(b, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("after a read given up on: %v", err)
	}

	// A closed file's buffer goes to the next file's reads: none of its
	// bytes show in them, whatever their lengths.
	write(t, path, string(data))
	write(t, root+"/db/1/part-00001.parquet", "short")
	for range 3 {
		ra = open(ctx)
		if _, err := ra.ReadAt(make([]byte, maxRead), 0); err != nil {
			t.Fatal(err)
		}
		ra.(io.Closer).Close()
		rc, err := src.Open(ctx, "db", "1", "part-00001.parquet")
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, 64)
		got, err := rc.(io.ReaderAt).ReadAt(b, 1)
		if got != 4 || err != io.EOF || string(b[:4]) != "hort" || !bytes.Equal(b[4:], make([]byte, 60)) {
			t.Fatalf("the next file: %d, %v, %q; want 4, io.EOF, \"hort\" and zeros", got, err, b)
		}
		rc.Close()
	}
}
