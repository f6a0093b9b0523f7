package table

import (
	"testing"

	"spangle/storaged/blockcache"
)

// BenchmarkOpenPartition opens one partition of the benchmark's 1M-key
// dataset (125k keys, 100-byte values, Snappy) through a 64 MiB block
// cache, as storaged does after loading it.
func BenchmarkOpenPartition(b *testing.B) {
	dir := benchPartition(b, BuildOptions{Snappy: true}, 125_000)
	cache := blockcache.New(64 << 20)
	b.ResetTimer()
	for range b.N {
		p, err := OpenPartition(dir, CacheOptions{Blocks: cache})
		if err != nil {
			b.Fatal(err)
		}
		p.Close()
	}
}
