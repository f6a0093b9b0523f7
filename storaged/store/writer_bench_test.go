package store

import (
	"fmt"
	"io"
	"path/filepath"
	"testing"
)

// BenchmarkWriteRun writes one partition of the benchmark's 1M-key
// dataset (125k keys, 100-byte values) as one run: the cost a load adds
// to decoding, per table.
func BenchmarkWriteRun(b *testing.B) {
	const keys = 125_000
	var ks [][]byte
	for i := 0; i < keys; i++ {
		ks = append(ks, fmt.Appendf(nil, "key-%010d", i*8))
	}
	val := make([]byte, 100)
	for i := range val {
		val[i] = byte('a' + i%26)
	}
	dir := b.TempDir()
	b.SetBytes(keys * (14 + 100))
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
func BenchmarkBuildTable(b *testing.B) {
	const keys = 125_000
	var ks [][]byte
	for i := 0; i < keys; i++ {
		ks = append(ks, fmt.Appendf(nil, "key-%010d", i*8))
	}
	val := make([]byte, 100)
	for i := range val {
		val[i] = byte('a' + i%26)
	}
	b.SetBytes(keys * (14 + 100))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w := newSSTWriter(io.Discard, BuildOptions{})
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
