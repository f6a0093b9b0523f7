package gcpace

import (
	"context"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// minPercent is Go's default, GOGC=100: Run never sets less.
const minPercent = 100

// minHeap is the runtime's smallest heap goal at GOGC=100. GOGC scales it
// too, so Percent counts a live heap as at least this much: otherwise a
// near-empty heap (a process just started) would be given a percentage
// whose minimum goal alone is far beyond the headroom.
const minHeap = 4 << 20

// What the collector scales by GOGC: the next collection starts once the
// heap has grown by GOGC percent of the live heap plus the goroutine
// stacks and globals it scanned.
var scaledMetrics = []string{"/gc/heap/live:bytes", "/gc/scan/stack:bytes", "/gc/scan/globals:bytes"}

// Percent is the GOGC percentage that lets the heap grow by at least
// headroom bytes before the next collection, where live is what GOGC
// scales (see scaledMetrics), and by at least as much as GOGC=100 would.
func Percent(live, headroom int64) int {
	if headroom <= 0 {
		return minPercent
	}
	return int(max(headroom*100/max(live, minHeap), minPercent))
}

// Run sets the collector's percentage from the live heap now and then
// every interval until ctx ends, and on return puts back the percentage
// it found. It returns at once when headroom is not positive or when the
// GOGC environment variable is set: the operator's setting wins.
func Run(ctx context.Context, headroom int64, every time.Duration) {
	if headroom <= 0 || os.Getenv("GOGC") != "" {
		return
	}
	samples := make([]metrics.Sample, len(scaledMetrics))
	for i, name := range scaledMetrics {
		samples[i].Name = name
	}
	set := -1
	pace := func() {
		metrics.Read(samples)
		var live int64
		for _, s := range samples {
			if s.Value.Kind() != metrics.KindUint64 {
				return
			}
			live += int64(s.Value.Uint64())
		}
		p := Percent(live, headroom)
		// Small changes are left alone: each setting recomputes the
		// collector's goal under the heap lock.
		if set < 0 || p < set*9/10 || p > set*11/10 {
			debug.SetGCPercent(p)
			set = p
		}
	}
	old := debug.SetGCPercent(minPercent)
	defer debug.SetGCPercent(old)
	pace()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			pace()
		}
	}
}
