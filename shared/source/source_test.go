package source

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
)

func write(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestListing(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	write(t, root+"/db1/v1/part-00000", "a")
	write(t, root+"/db1/v1/_SUCCESS", "")
	write(t, root+"/db1/v2/part-00000", "bb")
	write(t, root+"/db1/v2/.part-00000.crc", "x")
	write(t, root+"/db1/v2/_logs/history", "x")
	write(t, root+"/db1/bad.name/part-00000", "x")
	write(t, root+"/db1/_tmp/part-00000", "x")
	write(t, root+"/_hidden/v1/part-00000", "x")
	write(t, root+"/.dot/v1/part-00000", "x")
	write(t, root+"/file-not-dir", "x")
	write(t, root+"/db2/10/p", "x")

	src, err := Open(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	dbs, err := src.DBs(ctx)
	if err != nil || !reflect.DeepEqual(dbs, []string{"db1", "db2"}) {
		t.Fatalf("DBs = %v, %v", dbs, err)
	}
	vs, err := src.Versions(ctx, "db1")
	if err != nil || !reflect.DeepEqual(vs, []string{"v1", "v2"}) || Newest(vs) != "v2" {
		t.Fatalf("Versions = %v, %v", vs, err)
	}
	files, err := src.Files(ctx, "db1", "v2")
	if err != nil || len(files) != 1 || files[0].Name != "part-00000" || files[0].Size != 2 {
		t.Fatalf("Files = %+v, %v", files, err)
	}
	rc, err := src.Open(ctx, "db1", "v2", "part-00000")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "bb" {
		t.Fatalf("read %q", b)
	}

	withSuccess, err := Open("file://"+root, Options{RequireSuccess: true})
	if err != nil {
		t.Fatal(err)
	}
	vs, err = withSuccess.Versions(ctx, "db1")
	if err != nil || !reflect.DeepEqual(vs, []string{"v1"}) {
		t.Fatalf("Versions with _SUCCESS = %v, %v", vs, err)
	}
	if _, err := src.Versions(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing db: %v", err)
	}
}

func TestNeverLeavesRoot(t *testing.T) {
	ctx := context.Background()
	outside := t.TempDir()
	write(t, outside+"/secret/v1/part-00000", "secret")
	write(t, outside+"/secret-file", "secret")
	root := t.TempDir()
	write(t, root+"/db/v1/part-00000", "ok")
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(outside+"/secret", root+"/escape"))
	must(os.Symlink(outside+"/secret-file", root+"/db/v1/part-00001"))
	must(os.Symlink("../../../"+filepath.Base(outside), root+"/db/v2"))
	// A symlink that stays inside the root is fine.
	must(os.Symlink("v1", root+"/db/v3"))

	src, err := Open(root, Options{})
	must(err)
	dbs, _ := src.DBs(ctx)
	if !reflect.DeepEqual(dbs, []string{"db"}) {
		t.Fatalf("DBs = %v, want only db", dbs)
	}
	vs, _ := src.Versions(ctx, "db")
	if !reflect.DeepEqual(vs, []string{"v1", "v3"}) {
		t.Fatalf("Versions = %v", vs)
	}
	// A data file leading out of the root is never read, and never left
	// out quietly either: the version's listing fails, naming it.
	if files, err := src.Files(ctx, "db", "v1"); !errors.Is(err, ErrUnreadable) || !strings.Contains(err.Error(), "part-00001") {
		t.Fatalf("Files with an escaping data file = %+v, %v; want ErrUnreadable naming part-00001", files, err)
	}
	for _, name := range []string{"part-00001", "../v1/part-00000", "..", "/etc/passwd", "", "_SUCCESS"} {
		if rc, err := src.Open(ctx, "db", "v1", name); err == nil {
			rc.Close()
			t.Errorf("Open(%q) succeeded", name)
		}
	}
	for _, db := range []string{"..", "escape", "../x", ""} {
		if _, err := src.Files(ctx, db, "v1"); err == nil {
			t.Errorf("Files(%q) succeeded", db)
		}
	}
}

func TestOpenRoots(t *testing.T) {
	for _, bad := range []string{"", "ftp://host/x", "file://host/x", "/does/not/exist", "s3://", "s3:///prefix", "s3://bucket/a/../b", "s3://user@bucket/x", "s3://bucket/x?y=1"} {
		if _, err := Open(bad, Options{}); !errors.Is(err, ErrBadRoot) {
			t.Errorf("Open(%q) = %v, want ErrBadRoot", bad, err)
		}
	}
}

func TestUnreadableDataFileFailsListing(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	write(t, root+"/db/v1/part-00000", "ok")
	write(t, root+"/db/v1/sub/part-00000", "a directory is not a data file")
	src, err := Open(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if files, err := src.Files(ctx, "db", "v1"); err != nil || len(files) != 1 {
		t.Fatalf("Files with a subdirectory = %+v, %v; want part-00000 only", files, err)
	}
	if err := os.Symlink("part-99999", root+"/db/v1/part-00001"); err != nil {
		t.Fatal(err)
	}
	if _, err := src.Files(ctx, "db", "v1"); !errors.Is(err, ErrUnreadable) || !strings.Contains(err.Error(), "part-00001") {
		t.Fatalf("Files with a dangling link = %v; want ErrUnreadable naming part-00001", err)
	}
	os.Remove(root + "/db/v1/part-00001")
	if err := syscall.Mkfifo(root+"/db/v1/part-00002", 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := src.Files(ctx, "db", "v1"); !errors.Is(err, ErrUnreadable) || !strings.Contains(err.Error(), "part-00002") {
		t.Fatalf("Files with a fifo = %v; want ErrUnreadable naming part-00002", err)
	}
}
