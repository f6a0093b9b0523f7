package loader

import (
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"spangle/shared/partitioner"
	"spangle/shared/seqfile"
	"spangle/shared/source"
	"spangle/shared/sparkey"
	"spangle/storaged/internal/testutil"
)

// cpuTime is the CPU time (user and system, every thread) the process has
// used so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSparkeyFloor1M runs, side by side in each iteration, the steps
// that bound a Sparkey load from below, and reports each one's CPU time
// per run (on a shared machine CPU time, not wall time, is what is steady;
// a load that keeps both cores busy takes half its CPU time in wall time):
//
//   - seq-load: the same keys' load from uncompressed pre-sharded
//     SequenceFiles, the reference;
//   - seq-read: only reading those files (the rest of seq-load is building
//     the tables, which a Sparkey load that streams into tables does too);
//   - spk-load: the Sparkey load (Snappy blocks, streamed into tables);
//   - spk-plain-load: the same keys' Sparkey load from uncompressed logs,
//     served in place (copied, checked, mapped);
//   - spk-plain-stream: those uncompressed logs streamed into tables;
//   - spk-copy: only copying the uncompressed logs into files (read from
//     the source, written to the store; no parse), the least a load that
//     serves them in place must do;
//   - spk-cfr: only copying them in the kernel (copy_file_range, straight
//     from the source's directory) and summing the copy mapped, the least
//     a load placing them from the local source does;
//   - spk-read: reading the Sparkey pairs, index and log, every key's
//     hash and partition checked, no table written;
//   - spk-blocks: only decompressing and parsing every block of the logs,
//     the least that any design checking every key must do.
//
// Each also as a ratio to seq-load, and the bytes each allocated per run
// (storaged's collector runs rarely during a load, so what a load
// allocates is mostly what its peak RSS adds).
func BenchmarkSparkeyFloor1M(b *testing.B) {
	seqSrc, seqFiles := benchSource(b, true)
	spkSrc, spkFiles := benchSparkeySource(b)
	plainSrc, plainFiles := testutil.OpenVersion(b, testutil.BenchSparkeyDatasetOf(b, benchRecords, benchFiles, sparkey.None), "bench", "1")
	out := b.TempDir()
	loadWith := func(src source.Source, files []source.File, formats []Format) {
		dir := filepath.Join(out, "load")
		res, err := Load(context.Background(), Request{Source: src, DB: "bench", Version: "1", Files: files,
			Dir: func(p int) string { return filepath.Join(dir, fmt.Sprint(p)) }}, Options{Formats: formats})
		if err != nil || res.Records != benchRecords {
			b.Fatalf("load: %+v, %v", res, err)
		}
		b.StopTimer()
		os.RemoveAll(dir)
		b.StartTimer()
	}
	load := func(src source.Source, files []source.File) { loadWith(src, files, nil) }
	steps := []struct {
		name string
		run  func()
	}{
		{"seq-load", func() { load(seqSrc, seqFiles) }},
		{"seq-read", func() { benchEach(b, seqFiles, func(f source.File) int { return readSeq(b, seqSrc, f) }) }},
		{"spk-load", func() { load(spkSrc, spkFiles) }},
		{"spk-plain-load", func() { load(plainSrc, plainFiles) }},
		{"spk-plain-stream", func() {
			loadWith(plainSrc, plainFiles, []Format{SparkeyFormat{Stream: true}, SequenceFileFormat{}})
		}},
		{"spk-copy", func() {
			dir := filepath.Join(out, "copy")
			os.MkdirAll(dir, 0o755)
			benchEach(b, sparkeyUnits(b, plainFiles), func(u Unit) int {
				return copyFile(b, plainSrc, u.Files[0], filepath.Join(dir, u.Files[0].Name))
			})
			b.StopTimer()
			os.RemoveAll(dir)
			b.StartTimer()
		}},
		{"spk-cfr", func() {
			dir := filepath.Join(out, "cfr")
			os.MkdirAll(dir, 0o755)
			root := testutil.BenchSparkeyDatasetOf(b, benchRecords, benchFiles, sparkey.None)
			benchEach(b, sparkeyUnits(b, plainFiles), func(u Unit) int {
				return cfrFile(b, filepath.Join(root, "bench", "1", u.Files[0].Name), filepath.Join(dir, u.Files[0].Name))
			})
			b.StopTimer()
			os.RemoveAll(dir)
			b.StartTimer()
		}},
		{"spk-read", func() {
			l, err := Detect(spkFiles, nil)
			if err != nil {
				b.Fatal(err)
			}
			benchEach(b, l.Units, func(u Unit) int { return readSparkey(b, l.Format, spkSrc, u) })
		}},
		{"spk-blocks", func() {
			benchEach(b, sparkeyUnits(b, spkFiles), func(u Unit) int { return readSparkeyLog(b, spkSrc, u.Files[0]) })
		}},
	}
	cpu := make([]time.Duration, len(steps))
	alloc := make([]uint64, len(steps))
	var ms0, ms1 runtime.MemStats
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j, s := range steps {
			runtime.GC()
			runtime.ReadMemStats(&ms0)
			t0 := cpuTime(b)
			s.run()
			cpu[j] += cpuTime(b) - t0
			runtime.ReadMemStats(&ms1)
			alloc[j] += ms1.TotalAlloc - ms0.TotalAlloc
		}
	}
	for j, s := range steps {
		ms := float64(cpu[j].Microseconds()) / 1000 / float64(b.N)
		b.ReportMetric(ms, s.name+"-cpu-ms")
		b.ReportMetric(float64(alloc[j])/float64(b.N)/(1<<20), s.name+"-alloc-MiB")
		if j > 0 {
			b.ReportMetric(float64(cpu[j])/float64(cpu[0]), s.name+"/seq-load")
		}
	}
}

// benchEach runs read on every item, GOMAXPROCS at a time (as Load reads
// units), and checks that the items held benchRecords records in all.
func benchEach[T any](b *testing.B, items []T, read func(T) int) {
	var mu sync.Mutex
	total := 0
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for _, it := range items {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			n := read(it)
			mu.Lock()
			total += n
			mu.Unlock()
		}()
	}
	wg.Wait()
	if total != benchRecords {
		b.Fatalf("read %d records", total)
	}
}

func sparkeyUnits(b *testing.B, files []source.File) []Unit {
	l, err := SparkeyFormat{}.Layout(files)
	if err != nil {
		b.Fatal(err)
	}
	return l.Units
}

func readSeq(b *testing.B, src source.Source, f source.File) int {
	return countFile(b, src, f, func(rc io.Reader) (records, error) { return seqfile.NewReader(rc, f.Name) })
}

// records is what countFile needs of a reader.
type records interface {
	Next() bool
	Err() error
}

// countFile opens f, reads it with the reader open makes, and returns how
// many records it held.
func countFile(b *testing.B, src source.Source, f source.File, open func(io.Reader) (records, error)) int {
	rc, err := src.Open(context.Background(), "bench", "1", f.Name)
	if err != nil {
		b.Error(err)
		return 0
	}
	defer rc.Close()
	r, err := open(rc)
	if err != nil {
		b.Error(err)
		return 0
	}
	if c, ok := r.(interface{ Close() }); ok {
		defer c.Close()
	}
	n := 0
	for r.Next() {
		n++
	}
	if err := r.Err(); err != nil {
		b.Error(err)
	}
	return n
}

// readSparkey reads a unit of format f as Load does, partition check included, and
// writes nothing.
func readSparkey(b *testing.B, f Format, src source.Source, u Unit) int {
	in := Input{src: src, db: "bench", version: "1"}
	r, err := f.Open(context.Background(), u, in)
	if err != nil {
		b.Error(err)
		return 0
	}
	defer r.Close()
	n := 0
	for r.Next() {
		if partitioner.Partition(r.Key(), benchFiles) != u.Partition {
			b.Errorf("%s: key %q in the wrong partition", u.Files[0].Name, r.Key())
			return n
		}
		n++
	}
	if err := r.Err(); err != nil {
		b.Error(err)
	}
	return n
}

// readSparkeyLog only decodes a log's entries: no index, no hash.
func readSparkeyLog(b *testing.B, src source.Source, f source.File) int {
	return countFile(b, src, f, func(rc io.Reader) (records, error) { return sparkey.NewLogReader(rc, f.Name, f.Size) })
}

// BenchmarkSparkeyInPlace1M loads the uncompressed Sparkey pairs of 1M
// keys in place, alone: for profiles of that path.
func BenchmarkSparkeyInPlace1M(b *testing.B) {
	src, files := testutil.OpenVersion(b, testutil.BenchSparkeyDatasetOf(b, benchRecords, benchFiles, sparkey.None), "bench", "1")
	out := b.TempDir()
	var cpu time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		dir := filepath.Join(out, fmt.Sprint(i))
		t0 := cpuTime(b)
		res, err := Load(context.Background(), Request{Source: src, DB: "bench", Version: "1", Files: files,
			Dir: func(p int) string { return filepath.Join(dir, fmt.Sprint(p)) }}, Options{})
		cpu += cpuTime(b) - t0
		if err != nil || res.Records != benchRecords || res.InPlace != benchFiles {
			b.Fatalf("load: %+v, %v", res, err)
		}
		b.StopTimer()
		os.RemoveAll(dir)
		b.StartTimer()
	}
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms")
}

// copyFile copies f to path and returns the records the bench's units
// hold, for benchEach's count.
func copyFile(b *testing.B, src source.Source, f source.File, path string) int {
	rc, err := src.Open(context.Background(), "bench", "1", f.Name)
	if err != nil {
		b.Error(err)
		return 0
	}
	defer rc.Close()
	out, err := os.Create(path)
	if err != nil {
		b.Error(err)
		return 0
	}
	defer out.Close()
	if _, err := io.Copy(out, rc); err != nil {
		b.Error(err)
	}
	return benchRecords / benchFiles
}

// cfrFile copies from to to in the kernel, maps the copy and sums it
// (CRC-32C), and drops from's pages from the cache as the source does.
func cfrFile(b *testing.B, from, to string) int {
	in, err := os.Open(from)
	if err != nil {
		b.Fatal(err)
	}
	defer in.Close()
	fi, _ := in.Stat()
	out, err := os.Create(to)
	if err != nil {
		b.Fatal(err)
	}
	defer out.Close()
	left := fi.Size()
	for left > 0 {
		n, err := unix.CopyFileRange(int(in.Fd()), nil, int(out.Fd()), nil, int(min(left, 4<<20)), 0)
		if err != nil || n == 0 {
			b.Fatal(err, n)
		}
		left -= int64(n)
	}
	m, err := unix.Mmap(int(out.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		b.Fatal(err)
	}
	_ = crc32.Checksum(m, crc32.MakeTable(crc32.Castagnoli))
	unix.Munmap(m)
	_ = unix.Fadvise(int(in.Fd()), 0, 0, unix.FADV_DONTNEED)
	return benchRecords / benchFiles
}
