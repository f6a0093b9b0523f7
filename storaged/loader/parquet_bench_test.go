package loader

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"spangle/bench/dataset"
	"spangle/shared/parquetkv"
	"spangle/storaged/internal/testutil"
	"spangle/storaged/table"
)

// parquetBenchRoot writes (once, cached under the system temp dir) make
// bench's Parquet dataset of format, 1M keys in 8 files, and returns
// its root.
func parquetBenchRoot(b *testing.B, format string) string {
	root := filepath.Join(os.TempDir(), fmt.Sprintf("spangle-bench-%s-%d-%d", format, benchRecords, benchFiles))
	if _, err := os.Stat(filepath.Join(root, dataset.DB, dataset.Version, "_SUCCESS")); err == nil {
		return root
	}
	os.RemoveAll(root)
	if err := os.MkdirAll(root, 0o755); err != nil {
		b.Fatal(err)
	}
	if _, err := dataset.Write(context.Background(), root, dataset.Options{Keys: benchRecords, Files: benchFiles, Format: format}); err != nil {
		b.Fatal(err)
	}
	return root
}

// BenchmarkLoadParquet1M loads make bench's Parquet datasets (1M keys,
// 8 files, Snappy) and, for reference, the same keys as pre-sharded
// uncompressed SequenceFiles, without fsync, reporting CPU time per
// load (wall time on a shared machine is mostly other work).
func BenchmarkLoadParquet1M(b *testing.B) {
	for _, c := range []struct {
		name, format string
		marker       string
	}{
		{"seqfile", "", ""},
		{"kv", dataset.FormatParquet, ""},
		{"features", dataset.FormatParquetFeatures, "key_column = \"key\"\n"},
	} {
		b.Run(c.name, func(b *testing.B) {
			var opts Options
			var root, db, version string
			if c.format == "" {
				root, db, version = testutil.BenchDataset(b, benchRecords, benchFiles, true), "bench", "1"
			} else {
				root, db, version = parquetBenchRoot(b, c.format), dataset.DB, dataset.Version
				spec := parquetkv.DefaultFormat()
				if c.marker != "" {
					var err error
					if spec, err = parquetkv.ParseFormat([]byte(c.marker)); err != nil {
						b.Fatal(err)
					}
				}
				opts.Formats = WithParquet(nil, spec)
			}
			opts.Build = table.BuildOptions{NoSync: true}
			src, files := testutil.OpenVersion(b, root, db, version)
			out := b.TempDir()
			b.ResetTimer()
			var cpu time.Duration
			for i := 0; i < b.N; i++ {
				dir := filepath.Join(out, fmt.Sprint(i))
				c0 := cpuTime(b)
				res, err := Load(context.Background(), Request{Source: src, DB: db, Version: version, Files: files,
					Dir: func(p int) string { return filepath.Join(dir, fmt.Sprint(p)) }}, opts)
				cpu += cpuTime(b) - c0
				if err != nil || res.Records != benchRecords {
					b.Fatalf("load: %+v, %v", res, err)
				}
				if i == 0 {
					b.Logf("%+v", res)
				}
				b.StopTimer()
				os.RemoveAll(dir)
				b.StartTimer()
			}
			b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
			reportRSS(b)
		})
	}
}
