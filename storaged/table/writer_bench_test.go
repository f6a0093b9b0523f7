package table

import (
	"fmt"
	"io"
	"path/filepath"
	"testing"
)

// benchRecords are one partition of the benchmark's 1M-key dataset:
// 125k keys in order, 100-byte values.
func benchRecords() (keys [][]byte, value []byte) {
	for i := 0; i < 125_000; i++ {
		keys = append(keys, fmt.Appendf(nil, "key-%010d", i*8))
	}
	value = make([]byte, 100)
	for i := range value {
		value[i] = byte('a' + i%26)
	}
	return keys, value
}

// BenchmarkWriteRun writes one such partition as one run: the cost a load
// adds to decoding, per table.
func BenchmarkWriteRun(b *testing.B) {
	ks, val := benchRecords()
	dir := b.TempDir()
	b.SetBytes(int64(len(ks) * (14 + len(val))))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		pb, err := CreatePartition(filepath.Join(dir, fmt.Sprint(i)), BuildOptions{NoSync: true})
		if err != nil {
			b.Fatal(err)
		}
		w, _ := pb.NewRun()
		for _, k := range ks {
			if err := w.Append(k, val); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
		if err := pb.Finish(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBuildTable builds one such table into io.Discard: the CPU a
// table costs before the kernel's share.
func BenchmarkBuildTable(b *testing.B) { benchBuildTable(b, BuildOptions{}) }

// BenchmarkBuildTableNoFilter is BenchmarkBuildTable without the bloom
// filter, as storaged writes tables it maps (no block cache, plain
// blocks).
func BenchmarkBuildTableNoFilter(b *testing.B) { benchBuildTable(b, BuildOptions{BloomBitsPerKey: -1}) }

func benchBuildTable(b *testing.B, o BuildOptions) {
	ks, val := benchRecords()
	b.SetBytes(int64(len(ks) * (14 + len(val))))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w := newSSTWriter(io.Discard, o)
		for _, k := range ks {
			if err := w.add(k, val); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := w.finish(); err != nil {
			b.Fatal(err)
		}
		w.release()
	}
}

// BenchmarkSmallPartition builds and syncs a partition of 100 keys of
// 16-byte values, as each node of spanglescale's 500 dbs builds 2,700:
// there the fixed costs (a directory, three files created, four synced)
// are the whole cost.
func BenchmarkSmallPartition(b *testing.B) {
	root := b.TempDir()
	val := []byte("0123456789abcdef")
	c0 := cpuTime()
	for i := 0; i < b.N; i++ {
		pb, err := CreatePartition(filepath.Join(root, fmt.Sprintf("p-%d", i)), BuildOptions{})
		if err != nil {
			b.Fatal(err)
		}
		w, err := pb.NewRun()
		if err != nil {
			b.Fatal(err)
		}
		for k := 0; k < 100; k++ {
			if err := w.Append(fmt.Appendf(nil, "key-%06d", k), val); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
		if err := pb.Finish(); err != nil {
			b.Fatal(err)
		}
		if err := pb.Sync(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuTime()-c0)/float64(b.N), "cpu-ns/op")
}
