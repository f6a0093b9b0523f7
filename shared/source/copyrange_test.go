package source

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// CopyTo copies a local data file's next bytes into another file, going
// on from where reads left it; where the kernel cannot copy (here: a
// destination opened to append), it says so, having moved nothing, and
// reads go on; a file shorter than when opened fails with ErrChanged.
func TestLocalFileCopyTo(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	write(t, root+"/db/1/part-00000", "0123456789abcdef")
	src, err := Open(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	open := func() io.ReadCloser {
		rc, err := src.Open(ctx, "db", "1", "part-00000")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rc.Close() })
		return rc
	}
	rc := open()
	head := make([]byte, 4)
	if _, err := io.ReadFull(rc, head); err != nil {
		t.Fatal(err)
	}
	dst, err := os.Create(filepath.Join(t.TempDir(), "copy"))
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	fc, ok := rc.(FileCopier)
	if !ok {
		t.Fatal("a local data file is not a FileCopier")
	}
	if n, err := fc.CopyTo(dst, 5); n != 5 || err != nil {
		t.Fatalf("copied %d, %v; want 5", n, err)
	}
	if n, err := fc.CopyTo(dst, 100); n != 7 || err != nil {
		t.Fatalf("copied %d, %v; want the 7 left", n, err)
	}
	if got, _ := os.ReadFile(dst.Name()); string(got) != "456789abcdef" {
		t.Fatalf("copy %q", got)
	}
	if n, err := rc.Read(head); n != 0 || err != io.EOF {
		t.Fatalf("read past the copy: %d, %v; want EOF", n, err)
	}

	rc = open()
	app, err := os.OpenFile(filepath.Join(t.TempDir(), "append"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	if n, err := rc.(FileCopier).CopyTo(app, 4); n != 0 || !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("copy to an appending file: %d, %v; want ErrUnsupported", n, err)
	}
	if b, err := io.ReadAll(rc); string(b) != "0123456789abcdef" || err != nil {
		t.Fatalf("read after the refused copy: %q, %v", b, err)
	}

	rc = open()
	if err := os.Truncate(root+"/db/1/part-00000", 6); err != nil {
		t.Fatal(err)
	}
	dst2, err := os.Create(filepath.Join(t.TempDir(), "short"))
	if err != nil {
		t.Fatal(err)
	}
	defer dst2.Close()
	if n, err := rc.(FileCopier).CopyTo(dst2, 16); n != 6 || !errors.Is(err, ErrChanged) {
		t.Fatalf("copy of a file that shrank: %d, %v; want 6, ErrChanged", n, err)
	}
}
