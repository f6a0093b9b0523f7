package store

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"syscall"
	"testing"

	"spangle/storaged/blockcache"
)

// BenchmarkGet looks up random keys of one partition of the benchmark's
// 1M-key dataset (125k keys, 100-byte values: 8 partitions) through an
// 8 MiB block cache, which holds about half of it as storaged's default
// 64 MiB cache holds half of the dataset's 8 partitions: the default tables (4 KiB blocks, restart interval 4) against
// LevelDB's usual shape (16 KiB, 16). cpu-ns/op is the process's CPU time
// per lookup, steadier than ns/op on a shared machine.
func BenchmarkGet(b *testing.B) {
	const keys = 125_000
	for _, o := range []BuildOptions{{}, {BlockSize: 16 << 10, RestartInterval: 16}} {
		b.Run(fmt.Sprintf("block-%dk-restart-%d", o.blockSize()>>10, o.restartInterval()), func(b *testing.B) {
			dir := filepath.Join(b.TempDir(), "p-0")
			o.NoSync = true
			pb, err := CreatePartition(dir, o)
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
			p, err := OpenPartition(dir, CacheOptions{Blocks: blockcache.New(8 << 20)})
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
			cpu0 := cpuTime()
			b.ResetTimer()
			for b.Loop() {
				key = fmt.Appendf(key[:0], "key-%010d", rng.IntN(keys))
				if _, err := p.Get(key); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// cpuTime is the process's user and system CPU time in nanoseconds.
func cpuTime() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}
