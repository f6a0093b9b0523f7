package parquetkv

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
)

// writeLargeFile writes about mb MiB of rows (a string key, a 1 KiB
// value of incompressible bytes) to a file in dir, Snappy-compressed, in
// row groups of 16 Ki rows, and returns its path.
func writeLargeFile(t testing.TB, dir string, mb int) string {
	t.Helper()
	path := filepath.Join(dir, fmt.Sprintf("large-%d.parquet", mb))
	fh, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(fh, 1<<20)
	const batchRows = 16 << 10
	rng := rand.New(rand.NewPCG(1, 2))
	val := make([]byte, 1024)
	batches := mb * 1024 / batchRows
	err = writeParquetTo(w, kvSchema, batches, func(b *array.RecordBuilder, batch int) {
		kb, vb := b.Field(0).(*array.StringBuilder), b.Field(1).(*array.BinaryBuilder)
		for i := 0; i < batchRows; i++ {
			kb.Append("k" + strconv.Itoa(batch*batchRows+i))
			for j := 0; j < len(val); j += 8 {
				u := rng.Uint64()
				for k := 0; k < 8; k++ {
					val[j+k] = byte(u >> (8 * k))
				}
			}
			vb.Append(val)
		}
	}, parquet.WithCompression(compress.Codecs.Snappy), parquet.WithDictionaryDefault(false))
	if err == nil {
		err = w.Flush()
	}
	if err2 := fh.Close(); err == nil {
		err = err2
	}
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// peakRSS resets the kernel's peak-RSS mark of this process (Linux's
// clear_refs) after giving freed memory back, and returns a function
// that reports the peak since, in bytes.
func peakRSS(t testing.TB) func() int64 {
	t.Helper()
	debug.FreeOSMemory()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Fatalf("resetting peak RSS: %v", err)
	}
	return func() int64 {
		data, err := os.ReadFile("/proc/self/status")
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
				kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				return kb << 10
			}
		}
		t.Fatal("no VmHWM in /proc/self/status")
		return 0
	}
}

func readFileRecords(t testing.TB, path string) (int64, time.Duration) {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r, err := NewReader(fh, st.Size(), path, DefaultFormat(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var n int64
	for r.Next() {
		if len(r.Value()) != 1024 {
			t.Fatalf("record %d: %d-byte value", n, len(r.Value()))
		}
		n++
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return n, time.Since(start)
}

// TestMemoryBounded reads a 96 MiB file whose value column is nearly all
// of it, and checks that the reader's peak RSS grew by less than half the
// file: holding the file or the column would take all of it.
func TestMemoryBounded(t *testing.T) {
	path := writeLargeFile(t, t.TempDir(), 96)
	peak := peakRSS(t)
	base := peak()
	n, _ := readFileRecords(t, path)
	if n != 96*1024 {
		t.Fatalf("%d records", n)
	}
	grew := peak() - base
	t.Logf("peak RSS grew %d MiB reading a 96 MiB file", grew>>20)
	if grew > 48<<20 {
		t.Fatalf("peak RSS grew %d MiB reading a 96 MiB file; want under 48", grew>>20)
	}
}

// BenchmarkReadLarge writes one file of PARQUETKV_BENCH_MB MiB (default
// 1024) and reads it, reporting MB/s and the process's peak RSS while
// reading (the bound: under 200 MB for a 1 GB file).
func BenchmarkReadLarge(b *testing.B) {
	mb := 1024
	if s := os.Getenv("PARQUETKV_BENCH_MB"); s != "" {
		var err error
		if mb, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	path := writeLargeFile(b, b.TempDir(), mb)
	st, _ := os.Stat(path)
	b.SetBytes(st.Size())
	b.ResetTimer()
	var worst int64
	for i := 0; i < b.N; i++ {
		peak := peakRSS(b)
		readFileRecords(b, path)
		worst = max(worst, peak())
	}
	b.ReportMetric(float64(worst)/(1<<20), "peakRSS-MiB")
}
