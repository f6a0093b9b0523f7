package store

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
)

// BenchmarkGet looks up random keys of one partition of the benchmark's
// 1M-key dataset (125k keys, 100-byte values: 8 partitions) with the
// default 8 MiB block cache, which holds about half of it, as storaged
// serves it.
func BenchmarkGet(b *testing.B) {
	const keys = 125_000
	for _, bs := range []int{4 << 10, 16 << 10} {
		b.Run(fmt.Sprintf("block-%dk", bs>>10), func(b *testing.B) {
			dir := filepath.Join(b.TempDir(), "p-0")
			pb, err := CreatePartition(dir, BuildOptions{BlockSize: bs, NoSync: true})
			if err != nil {
				b.Fatal(err)
			}
			w, _ := pb.NewRun()
			val := make([]byte, 100)
			for i := 0; i < keys; i++ {
				if err := w.Append(fmt.Appendf(nil, "key-%010d", i), val); err != nil {
					b.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
			if err := pb.Finish(); err != nil {
				b.Fatal(err)
			}
			p, err := OpenPartition(dir, CacheOptions{})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			rng := rand.New(rand.NewPCG(1, 2))
			key := make([]byte, 0, 32)
			for i := 0; i < keys; i++ { // warm the cache
				p.Get(fmt.Appendf(key[:0], "key-%010d", rng.IntN(keys)))
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				key = fmt.Appendf(key[:0], "key-%010d", rng.IntN(keys))
				if _, err := p.Get(key); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
