package loader

import (
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"path/filepath"
	"testing"

	"spangle/shared/seqfile"
	"spangle/shared/source"
	"spangle/storaged/internal/testutil"
	"spangle/storaged/table"
)

// TestSpillMergedIntoOneRun: files in random order with a tiny buffer
// spill well over maxMerge times; every partition still ends as one
// merged run (beside the short sorted prefixes the fast path streamed
// before each file's order broke), every record is found and no spill
// file is left.
func TestSpillMergedIntoOneRun(t *testing.T) {
	root := t.TempDir()
	recs := testutil.Records(4000, "v1")
	rand.New(rand.NewSource(2)).Shuffle(len(recs), func(i, j int) { recs[i], recs[j] = recs[j], recs[i] })
	testutil.WriteVersion(t, root, "db", "v1", 3, testutil.RoundRobin, seqfile.WriterOptions{}, recs)
	src, files := testutil.OpenVersion(t, root, "db", "v1")
	out := t.TempDir()
	res, err := loadInto(t, src, files, out, Options{SpillBytes: 1 << 10, Parallel: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Records != int64(len(recs)) || res.Runs > 3+3 {
		t.Fatalf("%+v: want every record in one merged run per partition (and at most a prefix run per file)", res)
	}
	parts := openParts(t, out, 3)
	for _, r := range recs {
		if v, err := get(parts, r.Key); err != nil || !bytes.Equal(v, r.Value) {
			t.Fatalf("%q = %q, %v; want %q", r.Key, v, err, r.Value)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(out, "*", "spill-*")); len(left) > 0 {
		t.Fatalf("spill files left: %v", left)
	}
}

// TestSpillDuplicatesAcrossMergeLevels: with "last", a key written in
// the first and the last file meets its other record only in the final
// merge, after the spill files were merged in several levels; the later
// record wins, and "error" names both.
func TestSpillDuplicatesAcrossMergeLevels(t *testing.T) {
	root := t.TempDir()
	var a, b [][2]string
	for i := 0; i < 1500; i++ {
		a = append(a, [2]string{fmt.Sprintf("k%05d", (i*7919)%1500), "a"})
		b = append(b, [2]string{fmt.Sprintf("m%05d", (i*7919)%1500), "b"})
	}
	a[3] = [2]string{"dup", "first"}
	b[1400] = [2]string{"dup", "last"}
	writeParquetRows(t, root, "db", "v1", "part-00000.parquet", a)
	writeParquetRows(t, root, "db", "v1", "part-00001.parquet", b)
	res, parts, err := load(t, root, "db", "v1", nil, Options{Formats: dupSpec(t, "last"), SpillBytes: 512, Parallel: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Duplicates != 1 || res.Records != 3000 {
		t.Fatalf("%+v", res)
	}
	if v, err := get(parts, []byte("dup")); err != nil || string(v) != "last" {
		t.Fatalf("dup = %q, %v", v, err)
	}
	_, _, err = load(t, root, "db", "v1", nil, Options{Formats: dupSpec(t, "error"), SpillBytes: 512, Parallel: 2})
	if err == nil || !contains(err.Error(), "part-00000.parquet record 4", "part-00001.parquet record 1401") {
		t.Fatalf("err %v", err)
	}
}

// loadInto loads the version db/v1 of src into out/p-<partition>.
func loadInto(t *testing.T, src source.Source, files []source.File, out string, opts Options) (Result, error) {
	t.Helper()
	opts.Build.NoSync = true
	return Load(context.Background(), Request{Source: src, DB: "db", Version: "v1", Files: files,
		Dir: func(p int) string { return filepath.Join(out, fmt.Sprintf("p-%d", p)) }}, opts)
}

// openParts opens the n partitions loadInto built.
func openParts(t *testing.T, out string, n int) []*table.Partition {
	t.Helper()
	parts := make([]*table.Partition, n)
	for p := range parts {
		var err error
		if parts[p], err = table.OpenPartition(filepath.Join(out, fmt.Sprintf("p-%d", p)), table.CacheOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { parts[p].Close() })
	}
	return parts
}
