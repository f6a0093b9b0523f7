//go:build unix

package source

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// noHang runs f and fails the test if it has not returned within d: the
// operations under test used to block forever.
func noHang(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s still blocked after %v", what, d)
	}
}

func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A FIFO where a marker or a data file belongs is refused at once,
// never opened so that it waits for a writer.
func TestLocalFIFOsNeverBlock(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	write(t, root+"/db/1/part-00000", "a")
	write(t, root+"/db/2/part-00000", "b")
	mkfifo(t, root+"/db/_PIN")
	mkfifo(t, root+"/db/2/part-00001")
	mkfifo(t, root+"/db/1/_SUCCESS")
	src, err := Open(root, Options{RequireSuccess: true})
	if err != nil {
		t.Fatal(err)
	}
	noHang(t, 10*time.Second, "Pin of a FIFO _PIN", func() {
		if v, err := src.Pin(ctx, "db"); !errors.Is(err, ErrBadPin) || v != "" || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("FIFO _PIN: Pin = %q, %v; want ErrBadPin, not a regular file", v, err)
		}
	})
	noHang(t, 10*time.Second, "Open of a FIFO data file", func() {
		if rc, err := src.Open(ctx, "db", "2", "part-00001"); !errors.Is(err, ErrUnreadable) {
			if rc != nil {
				rc.Close()
			}
			t.Errorf("FIFO data file: Open = %v; want ErrUnreadable", err)
		}
		if _, err := src.Files(ctx, "db", "2"); !errors.Is(err, ErrUnreadable) {
			t.Errorf("FIFO data file: Files = %v; want ErrUnreadable", err)
		}
	})
	noHang(t, 10*time.Second, "Versions with a FIFO _SUCCESS", func() {
		if vs, err := src.Versions(ctx, "db"); err != nil || len(vs) != 0 {
			t.Errorf("a FIFO is no _SUCCESS: Versions = %v, %v", vs, err)
		}
	})
}

// A marker larger than a marker can be is refused before it is read.
func TestLocalPinTooLarge(t *testing.T) {
	root := t.TempDir()
	write(t, root+"/db/1/part-00000", "a")
	write(t, root+"/db/_PIN", "1\n"+strings.Repeat(" ", MaxPinSize))
	src, err := Open(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := src.Pin(context.Background(), "db"); !errors.Is(err, ErrBadPin) || v != "" {
		t.Fatalf("Pin = %q, %v; want ErrBadPin", v, err)
	}
}

// A data file is read to the size it had when opened; one that grows
// meanwhile fails with ErrChanged rather than be read half old, half new.
func TestLocalFileChangedWhileRead(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	write(t, root+"/db/1/part-00000", "0123456789")
	src, err := Open(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rc, err := src.Open(ctx, "db", "1", "part-00000")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	buf := make([]byte, 4)
	if n, err := io.ReadFull(rc, buf); n != 4 || err != nil {
		t.Fatalf("read %d, %v", n, err)
	}
	f, err := os.OpenFile(root+"/db/1/part-00000", os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("more")
	f.Close()
	if _, err := io.ReadAll(rc); !errors.Is(err, ErrChanged) {
		t.Fatalf("a file that grew: %v; want ErrChanged", err)
	}
}

// An operation that does not return is given up on after the timeout or
// when the context ends, and what it opens late is closed.
func TestBoundedGivesUp(t *testing.T) {
	never := make(chan struct{})
	defer close(never)
	block := func() (int, error) { <-never; return 1, nil }
	if _, err, ok := bounded(context.Background(), 20*time.Millisecond, "stuck", block, nil); ok || !errors.Is(err, ErrUnavailable) {
		t.Fatalf("past the timeout: %v, %v; want ErrUnavailable", ok, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err, ok := bounded(ctx, time.Hour, "stuck", block, nil); ok || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v, %v", ok, err)
	}
	late := make(chan struct{})
	discarded := make(chan int, 1)
	_, _, ok := bounded(context.Background(), 10*time.Millisecond, "late", func() (int, error) { <-late; return 7, nil },
		func(v int) { discarded <- v })
	if ok {
		t.Fatal("not given up on")
	}
	close(late)
	if v := <-discarded; v != 7 {
		t.Fatalf("discarded %d", v)
	}
}
