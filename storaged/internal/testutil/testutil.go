package testutil

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"spangle/shared/seqfile"
	"spangle/shared/source"
	"spangle/shared/versiontest"
	"spangle/storaged/store"
)

// TestData returns <repo root>/../shared/testdata, the Hadoop-written files
// beside the checkout. The repo root is the first directory above the
// working directory holding go.mod. It fails the test when missing: these
// files are part of the contract, never optional.
func TestData(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("testutil: no go.mod above the working directory")
		}
		dir = parent
	}
	td := filepath.Join(dir, "..", "shared", "testdata")
	if _, err := os.Stat(filepath.Join(td, "healthy")); err != nil {
		t.Fatalf("testutil: shared test data missing at %s: %v", td, err)
	}
	return td
}

// Record is one key and value.
type Record = versiontest.Record

// Layout says how WriteVersion spreads records over files.
type Layout = versiontest.Layout

const (
	// Sharded writes each partition's records, sorted, to its own file,
	// as a Hadoop job with spangle's partitioner would.
	Sharded = versiontest.Sharded
	// RoundRobin deals records over files in the given order.
	RoundRobin = versiontest.RoundRobin
)

// WriteVersion writes records as a version of n files under
// root/db/version, with the given layout and options, and a _SUCCESS file.
func WriteVersion(t testing.TB, root, db, version string, n int, layout Layout, opts seqfile.WriterOptions, recs []Record) string {
	t.Helper()
	return versiontest.For(t).Write(root, db, version, versiontest.Options{Files: n, Layout: layout, Sort: layout == Sharded, SeqFile: opts}, recs)
}

// WriteFile writes one SequenceFile.
func WriteFile(t testing.TB, path string, opts seqfile.WriterOptions, recs []Record) {
	t.Helper()
	versiontest.For(t).File(path, versiontest.Options{SeqFile: opts}, recs)
}

// Records returns n records "key-<i>" -> "value-<i>-<version>".
func Records(n int, version string) []Record {
	return versiontest.Numbered(n, "key-%06d", "value-%d-"+version)
}

// OpenVersion opens root as a source and lists the files of db/version.
func OpenVersion(t testing.TB, root, db, version string) (source.Source, []source.File) {
	t.Helper()
	src, err := source.Open(root, source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	files, err := src.Files(context.Background(), db, version)
	if err != nil {
		t.Fatal(err)
	}
	return src, files
}

// OpenStore opens root as a source and storeDir as a local store.
func OpenStore(t testing.TB, root, storeDir string) (source.Source, *store.Store) {
	t.Helper()
	src, err := source.Open(root, source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(storeDir)
	if err != nil {
		t.Fatal(err)
	}
	return src, st
}
