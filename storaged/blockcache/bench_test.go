package blockcache

import (
	"fmt"
	"runtime"
	"testing"
)

// BenchmarkCollect times a full collection of a process holding a full
// cache: what the cache's own structures cost each cycle of the
// collector, which under load runs several times a second. 30k blocks of
// 4 KiB hold a 1M-key version; 300k a 10M-key one.
func BenchmarkCollect(b *testing.B) {
	for _, blocks := range []int{30_000, 300_000} {
		b.Run(fmt.Sprintf("blocks=%d", blocks), func(b *testing.B) {
			c := New(int64(blocks) * 4608 * 11 / 10)
			addBlocks(b, c, blocks, 4200)
			runtime.GC()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				runtime.GC()
			}
			b.StopTimer()
			runtime.KeepAlive(c)
		})
	}
}
