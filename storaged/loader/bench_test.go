package loader

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"spangle/shared/source"
	"spangle/storaged/internal/testutil"
	"spangle/storaged/table"
)

// The dataset of the issue: 1M records of 100-byte values in 8 files.
const (
	benchRecords = 1_000_000
	benchFiles   = 8
)

func benchSource(b *testing.B, sharded bool) (source.Source, []source.File) {
	return testutil.OpenVersion(b, testutil.BenchDataset(b, benchRecords, benchFiles, sharded), "bench", "1")
}

func benchSparkeySource(b *testing.B) (source.Source, []source.File) {
	return testutil.OpenVersion(b, testutil.BenchSparkeyDataset(b, benchRecords, benchFiles), "bench", "1")
}

func reportRSS(b *testing.B) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		b.ReportMetric(float64(ru.Maxrss)/1024, "peak-RSS-MB")
	}
}

// reportCPU reports the CPU time per op since from (cpuTime at the
// start, after the timer was reset).
func reportCPU(b *testing.B, from time.Duration) {
	b.ReportMetric(float64(cpuTime(b)-from)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
}

// BenchmarkDecode1M only reads and decodes every record, files in
// parallel as Load reads them: the floor a load is measured against.
func BenchmarkDecode1M(b *testing.B) {
	src, files := benchSource(b, true)
	b.ResetTimer()
	cpu := cpuTime(b)
	for i := 0; i < b.N; i++ {
		benchEach(b, files, func(f source.File) int { return readSeq(b, src, f) })
	}
	reportCPU(b, cpu)
	b.ReportMetric(float64(benchRecords)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
	reportRSS(b)
}

// BenchmarkLoad1M loads the whole version into partition databases:
// pre-sharded files (the fast path) and files in random order (the
// general path), with and without fsync, and the same keys as Sparkey
// pairs with Snappy blocks.
func BenchmarkLoad1M(b *testing.B) {
	for _, c := range []struct {
		name    string
		sharded bool
		noSync  bool
		sparkey bool
	}{{"sharded", true, false, false}, {"sharded-nosync", true, true, false}, {"unsharded", false, false, false},
		{"sparkey", true, false, true}} {
		b.Run(c.name, func(b *testing.B) {
			src, files := benchSource(b, c.sharded)
			if c.sparkey {
				src, files = benchSparkeySource(b)
			}
			out := b.TempDir()
			b.ResetTimer()
			cpu, removing := cpuTime(b), time.Duration(0)
			for i := 0; i < b.N; i++ {
				dir := filepath.Join(out, fmt.Sprint(i))
				res, err := Load(context.Background(), Request{Source: src, DB: "bench", Version: "1", Files: files,
					Dir: func(p int) string { return filepath.Join(dir, fmt.Sprint(p)) }},
					Options{Build: table.BuildOptions{NoSync: c.noSync}})
				if err != nil || res.Records != benchRecords {
					b.Fatalf("load: %+v, %v", res, err)
				}
				b.StopTimer()
				t := cpuTime(b)
				os.RemoveAll(dir)
				removing += cpuTime(b) - t
				b.StartTimer()
			}
			reportCPU(b, cpu+removing)
			b.ReportMetric(float64(benchRecords)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
			reportRSS(b)
		})
	}
}

// BenchmarkSparkeyRead1M reads every pair of the Sparkey dataset (index
// first, then the log, every key's hash checked) without building
// tables: what a load that served the files in place would still do,
// less the copy.
func BenchmarkSparkeyRead1M(b *testing.B) {
	src, files := benchSparkeySource(b)
	layout, err := Detect(files, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		benchEach(b, layout.Units, func(u Unit) int { return readSparkey(b, layout.Format, src, u) })
	}
	b.ReportMetric(float64(benchRecords)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}
