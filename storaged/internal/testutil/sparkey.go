package testutil

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"spangle/shared/hashring"
	"spangle/shared/sparkey"
)

// WriteSparkeyVersion writes records as a Sparkey version of n partitions
// under root/db/version, as a sequins job would: per partition, the sorted
// pair part-<p>.spl and part-<p>.spi.sz (empty partitions too), and a
// _SUCCESS file.
func WriteSparkeyVersion(t testing.TB, root, db, version string, n int, opts sparkey.WriterOptions, recs []Record) string {
	t.Helper()
	final := filepath.Join(root, db, version)
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp(filepath.Dir(final), "_tmp-"+version)
	if err != nil {
		t.Fatal(err)
	}
	parts := make([][]Record, n)
	for _, r := range recs {
		p := hashring.Partition(r.Key, n)
		parts[p] = append(parts[p], r)
	}
	for p, pr := range parts {
		sort.SliceStable(pr, func(a, b int) bool { return string(pr[a].Key) < string(pr[b].Key) })
		WriteSparkeyPair(t, dir, fmt.Sprintf("part-%05d", p), opts, pr)
	}
	if err := os.WriteFile(filepath.Join(dir, "_SUCCESS"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(dir, final); err != nil {
		t.Fatal(err)
	}
	return final
}

// WriteSparkeyPair writes dir/base.spl and dir/base.spi.sz holding recs,
// in the given order.
func WriteSparkeyPair(t testing.TB, dir, base string, opts sparkey.WriterOptions, recs []Record) {
	t.Helper()
	lf, err := os.Create(filepath.Join(dir, base+".spl"))
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	xf, err := os.Create(filepath.Join(dir, base+".spi.sz"))
	if err != nil {
		t.Fatal(err)
	}
	defer xf.Close()
	w, err := sparkey.NewWriter(lf, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := w.Put(r.Key, r.Value); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(xf); err != nil {
		t.Fatal(err)
	}
	if err := lf.Close(); err != nil {
		t.Fatal(err)
	}
	if err := xf.Close(); err != nil {
		t.Fatal(err)
	}
}

// BenchSparkeyDataset is BenchDataset's keys and values as a Sparkey
// version of files partitions with Snappy blocks of 4 KiB (what
// libsparkey users write), generated once and kept in the temp dir.
func BenchSparkeyDataset(b testing.TB, n, files int) string {
	b.Helper()
	root := filepath.Join(os.TempDir(), fmt.Sprintf("spangle-bench-sparkey-%d-%d", n, files))
	dir := filepath.Join(root, "bench", "1")
	if _, err := os.Stat(filepath.Join(dir, "_SUCCESS")); err == nil {
		return root
	}
	os.RemoveAll(root)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	ids := make([][]int, files)
	for i := 0; i < n; i++ {
		p := hashring.Partition(BenchKey(i), files)
		ids[p] = append(ids[p], i) // ascending i is ascending key
	}
	val := make([]byte, 100)
	for p, pi := range ids {
		recs := make([]Record, 0, len(pi))
		for _, i := range pi {
			BenchValue(val, i)
			recs = append(recs, Record{Key: BenchKey(i), Value: append([]byte(nil), val...)})
		}
		WriteSparkeyPair(b, dir, fmt.Sprintf("part-%05d", p), sparkey.WriterOptions{Compression: sparkey.Snappy}, recs)
	}
	if err := os.WriteFile(filepath.Join(dir, "_SUCCESS"), nil, 0o644); err != nil {
		b.Fatal(err)
	}
	return root
}
