package scale

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSpreadDirs: on a filesystem that keeps inode flags (ext4, as the
// temp dir is here), the dir carries FS_TOPDIR_FL afterwards and its
// other flags are kept; elsewhere spreadDirs says it could not.
func TestSpreadDirs(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	before, getErr := unix.IoctlGetUint32(int(f.Fd()), unix.FS_IOC_GETFLAGS)
	err = spreadDirs(dir)
	if getErr != nil {
		if err == nil {
			t.Fatalf("spreadDirs succeeded where the flags cannot be read (%v)", getErr)
		}
		return
	}
	if err != nil {
		t.Logf("flags kept but not settable here: %v", err)
		return
	}
	after, err := unix.IoctlGetUint32(int(f.Fd()), unix.FS_IOC_GETFLAGS)
	if err != nil {
		t.Fatal(err)
	}
	if after != before|topDirFlag {
		t.Fatalf("flags %#x after spreadDirs, want %#x", after, before|topDirFlag)
	}
}

// TestDirNamesDifferAcrossRuns: ext4 places a top directory's
// subdirectory by its name's hash, so the same names in every run put a
// run's stores where the run before removed its own.
func TestDirNamesDifferAcrossRuns(t *testing.T) {
	names := map[string]bool{}
	for i := 0; i < 2; i++ {
		r := &run{tmp: t.TempDir()}
		d, err := r.dir("dbs-store")
		if err != nil {
			t.Fatal(err)
		}
		base := filepath.Base(d)
		if !strings.HasPrefix(base, "dbs-store-1-") {
			t.Fatalf("dir %q, want dbs-store-1-...", base)
		}
		if names[base] {
			t.Fatalf("two runs' first stores are both named %q", base)
		}
		names[base] = true
	}
}
