package testutil

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"spangle/shared/hashring"
	"spangle/shared/seqfile"
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
type Record struct{ Key, Value []byte }

// Layout says how WriteVersion spreads records over files.
type Layout int

const (
	// Sharded writes each partition's records, sorted, to its own file,
	// as a Hadoop job with spangle's partitioner would.
	Sharded Layout = iota
	// RoundRobin deals records over files in the given order.
	RoundRobin
)

// WriteVersion writes records as a version of n files under
// root/db/version, with the given layout and options, and a _SUCCESS file.
func WriteVersion(t testing.TB, root, db, version string, n int, layout Layout, opts seqfile.WriterOptions, recs []Record) string {
	t.Helper()
	// Written aside and renamed into place, as a job's output commits: a
	// daemon scanning meanwhile sees the whole version or none of it.
	final := filepath.Join(root, db, version)
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp(filepath.Dir(final), "_tmp-"+version)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := os.Rename(dir, final); err != nil {
			t.Fatal(err)
		}
	}()
	files := make([][]Record, n)
	for i, r := range recs {
		f := i % n
		if layout == Sharded {
			f = hashring.Partition(r.Key, n)
		}
		files[f] = append(files[f], r)
	}
	for i, fr := range files {
		if layout == Sharded {
			sort.SliceStable(fr, func(a, b int) bool { return string(fr[a].Key) < string(fr[b].Key) })
		}
		WriteFile(t, filepath.Join(dir, fmt.Sprintf("part-%05d", i)), opts, fr)
	}
	if err := os.WriteFile(filepath.Join(dir, "_SUCCESS"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return final
}

// WriteFile writes one SequenceFile.
func WriteFile(t testing.TB, path string, opts seqfile.WriterOptions, recs []Record) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := seqfile.NewWriter(f, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := w.Append(r.Key, r.Value); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// Records returns n records "key-<i>" -> "value-<i>-<version>".
func Records(n int, version string) []Record {
	recs := make([]Record, n)
	for i := range recs {
		recs[i] = Record{Key: []byte(fmt.Sprintf("key-%06d", i)), Value: []byte(fmt.Sprintf("value-%d-%s", i, version))}
	}
	return recs
}
