package loader

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"spangle/shared/seqfile"
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
	root := testutil.BenchDataset(b, benchRecords, benchFiles, sharded)
	src, err := source.Open(root, source.Options{})
	if err != nil {
		b.Fatal(err)
	}
	files, err := src.Files(context.Background(), "bench", "1")
	if err != nil {
		b.Fatal(err)
	}
	return src, files
}

func benchSparkeySource(b *testing.B) (source.Source, []source.File) {
	root := testutil.BenchSparkeyDataset(b, benchRecords, benchFiles)
	src, err := source.Open(root, source.Options{})
	if err != nil {
		b.Fatal(err)
	}
	files, err := src.Files(context.Background(), "bench", "1")
	if err != nil {
		b.Fatal(err)
	}
	return src, files
}

func reportRSS(b *testing.B) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		b.ReportMetric(float64(ru.Maxrss)/1024, "peak-RSS-MB")
	}
}

// BenchmarkDecode1M only reads and decodes every record, files in
// parallel as Load reads them: the floor a load is measured against.
func BenchmarkDecode1M(b *testing.B) {
	src, files := benchSource(b, true)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var n atomic.Int64
		var wg sync.WaitGroup
		sem := make(chan struct{}, runtime.GOMAXPROCS(0))
		for _, f := range files {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				rc, err := src.Open(context.Background(), "bench", "1", f.Name)
				if err != nil {
					b.Error(err)
					return
				}
				defer rc.Close()
				r, err := seqfile.NewReader(rc, f.Name)
				if err != nil {
					b.Error(err)
					return
				}
				c := int64(0)
				for r.Next() {
					c += int64(len(r.Key()) + len(r.Value()))
				}
				n.Add(c)
			}()
		}
		wg.Wait()
		if n.Load() == 0 {
			b.Fatal("nothing decoded")
		}
	}
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
			for i := 0; i < b.N; i++ {
				dir := filepath.Join(out, fmt.Sprint(i))
				res, err := Load(context.Background(), Request{Source: src, DB: "bench", Version: "1", Files: files,
					Dir: func(p int) string { return filepath.Join(dir, fmt.Sprint(p)) }},
					Options{Build: table.BuildOptions{NoSync: c.noSync}})
				if err != nil || res.Records != benchRecords {
					b.Fatalf("load: %+v, %v", res, err)
				}
				b.StopTimer()
				os.RemoveAll(dir)
				b.StartTimer()
			}
			b.ReportMetric(float64(benchRecords)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
			reportRSS(b)
		})
	}
}
