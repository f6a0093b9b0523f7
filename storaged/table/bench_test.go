package table

import (
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"

	"spangle/storaged/blockcache"
)

// BenchmarkGet looks up random keys of one partition of the benchmark's
// 1M-key dataset (125k keys, 100-byte values: 8 partitions), as storaged
// serves it, with the block cache holding all of it (hits only), half of
// it (as storaged's default 64 MiB cache holds half of the dataset's 8
// partitions), and none (every lookup reads its block): the default tables
// (4 KiB blocks, restart interval 4) against LevelDB's usual shape (16 KiB,
// 16). cpu-ns/op is the process's CPU time per lookup, steadier than ns/op
// on a shared machine.
func BenchmarkGet(b *testing.B) {
	const keys = 125_000
	for _, o := range []BuildOptions{{}, {BlockSize: 16 << 10, RestartInterval: 16}} {
		dir := benchPartition(b, o, keys)
		for _, c := range []struct {
			name string
			size int64
		}{{"all", 64 << 20}, {"half", 8 << 20}, {"none", 0}} {
			name := fmt.Sprintf("block-%dk-restart-%d/cache-%s", o.blockSize()>>10, o.restartInterval(), c.name)
			b.Run(name, func(b *testing.B) {
				p, err := OpenPartition(dir, CacheOptions{Blocks: blockcache.New(c.size)})
				if err != nil {
					b.Fatal(err)
				}
				defer p.Close()
				benchGets(b, p, keys)
			})
		}
	}
}

// benchPartition builds a partition of keys keys ("key-%010d", in
// order) with 100-byte values, and returns its directory.
func benchPartition(b *testing.B, o BuildOptions, keys int) string {
	val := make([]byte, 100)
	return writePartition(b, keys, o, func(i int) ([]byte, []byte) {
		return fmt.Appendf(nil, "key-%010d", i), val
	})
}

// cpuTime is the process's user and system CPU time in nanoseconds.
func cpuTime() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// benchGets measures p.Get on random keys of the keys a partition holds
// ("key-%010d", 0 <= i < keys), the keys made beforehand so that the loop
// measures Get alone, after a round of lookups that warms the block cache
// or faults in the mapped pages.
func benchGets(b *testing.B, p *Partition, keys int) {
	rng := rand.New(rand.NewPCG(1, 2))
	lookups := make([][]byte, 1<<16)
	for i := range lookups {
		lookups[i] = fmt.Appendf(nil, "key-%010d", rng.IntN(keys))
	}
	for i := 0; i < 2*keys; i++ {
		p.Get(nil, lookups[i%len(lookups)])
	}
	b.ReportAllocs()
	cpu0 := cpuTime()
	b.ResetTimer()
	i := 0
	dst := make([]byte, 0, 256)
	for b.Loop() {
		if _, err := p.Get(dst[:0], lookups[i&(len(lookups)-1)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}

// BenchmarkGetBatch looks up 100 random keys at a time of a mapped
// 200k-key partition (100-byte values: the batch bench's dataset in one
// partition), one Get after another, and readied first with a
// Prefetch as storaged's batches are. cpu-ns/key is the process's CPU
// time per key.
func BenchmarkGetBatch(b *testing.B) {
	const keys, batch = 200_000, 100
	dir := benchPartition(b, BuildOptions{}, keys)
	p, err := OpenPartition(dir, CacheOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	lookups := make([][]byte, 1<<16)
	for i := range lookups {
		lookups[i] = fmt.Appendf(nil, "key-%010d", rng.IntN(keys))
	}
	for i := 0; i < 2*keys; i++ {
		p.Get(nil, lookups[i%len(lookups)])
	}
	// evict is a buffer larger than the CPU's caches, walked between
	// batches as the rest of a daemon's work would: the next batch's
	// blocks are not in the caches.
	evict := make([]byte, 64<<20)
	for _, prefetch := range []bool{false, true} {
		b.Run(fmt.Sprintf("prefetch=%v", prefetch), func(b *testing.B) {
			var f Prefetch
			spots := make([]int, batch)
			dst := make([]byte, 0, 256)
			i := 0
			var cpu int64
			for b.Loop() {
				b.StopTimer()
				for j := 0; j < len(evict); j += 64 {
					evict[j]++
				}
				at := i
				i += batch
				b.StartTimer()
				c0 := cpuTime()
				if prefetch {
					for j := 0; j < batch; j++ {
						spots[j] = p.AddPrefetch(&f, lookups[(at+j)&(len(lookups)-1)])
					}
					f.Run()
				}
				for j := 0; j < batch; j++ {
					if prefetch {
						if _, ok := f.Get(dst[:0], spots[j]); ok {
							continue
						}
					}
					if _, err := p.Get(dst[:0], lookups[(at+j)&(len(lookups)-1)]); err != nil {
						b.Fatal(err)
					}
				}
				f.Reset()
				cpu += cpuTime() - c0
				b.StopTimer()
				b.StartTimer()
			}
			b.ReportMetric(float64(cpu)/float64(b.N*batch), "cpu-ns/key")
		})
	}
}
