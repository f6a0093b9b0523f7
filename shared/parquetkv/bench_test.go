package parquetkv_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"spangle/bench/dataset"
	"spangle/shared/parquetkv"
)

// benchRows is one file's share of make bench's 1M keys in 8 files.
const benchRows = 125_000

// benchFile writes (once, cached under the system temp dir) one file of
// bench/dataset's Parquet format and returns its path.
func benchFile(b *testing.B, format string) string {
	b.Helper()
	root := filepath.Join(os.TempDir(), fmt.Sprintf("spangle-parquetkv-bench-%s-%d", format, benchRows))
	path := filepath.Join(root, dataset.DB, "1", "part-00000-c000.snappy.parquet")
	if _, err := os.Stat(filepath.Join(root, dataset.DB, "1", "_SUCCESS")); err == nil {
		return path
	}
	os.RemoveAll(root)
	if err := os.MkdirAll(root, 0o755); err != nil {
		b.Fatal(err)
	}
	ds, err := dataset.Write(context.Background(), root, dataset.Options{Keys: benchRows, Files: 1, Version: "1", Format: format})
	if err != nil {
		b.Fatal(err)
	}
	if len(ds.Files) != 1 || ds.Files[0] != path {
		b.Fatalf("dataset files %q, want %s", ds.Files, path)
	}
	return path
}

// BenchmarkRead reads one file of make bench's Parquet datasets: the
// key + 100-byte value table (kv), and the 12-column feature table
// served as JSON (features), the work of one loader goroutine; cpu-ns/row
// counts the collector's work too.
func BenchmarkRead(b *testing.B) {
	for _, c := range []struct {
		name   string
		format string
		spec   parquetkv.Format
	}{
		{"kv", dataset.FormatParquet, parquetkv.DefaultFormat()},
		{"features", dataset.FormatParquetFeatures, parquetkv.Format{KeyColumn: "key", Duplicates: parquetkv.DuplicatesError}},
	} {
		b.Run(c.name, func(b *testing.B) {
			path := benchFile(b, c.format)
			fh, err := os.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			defer fh.Close()
			st, err := fh.Stat()
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			c0 := cpuTime(b)
			var bytes int64
			for i := 0; i < b.N; i++ {
				r, err := parquetkv.NewReader(fh, st.Size(), path, c.spec, parquetkv.Options{})
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for r.Next() {
					bytes += int64(len(r.Key()) + len(r.Value()))
					n++
				}
				if err := r.Err(); err != nil {
					b.Fatal(err)
				}
				r.Close()
				if n != benchRows {
					b.Fatalf("%d rows, want %d", n, benchRows)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchRows), "ns/row")
			b.ReportMetric(float64((cpuTime(b)-c0).Nanoseconds())/float64(b.N*benchRows), "cpu-ns/row")
			b.ReportMetric(float64(bytes)/float64(b.N*benchRows), "B/record")
		})
	}
}

// cpuTime is the process's CPU time so far, user and system: on a shared
// machine wall time is mostly other work.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
