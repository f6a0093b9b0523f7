package gcpace

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Bounds of the percentage Run sets. maxPercent keeps a near-empty heap
// (a process just started) from being given a headroom hundreds of
// times its size in one step.
const (
	minPercent = 100
	maxPercent = 10_000
)

// liveMetric is the heap memory the last collection found reachable.
const liveMetric = "/gc/heap/live:bytes"

// Percent is the GOGC percentage that lets a heap of live bytes grow by
// at least headroom bytes before the next collection, and by at least as
// much as GOGC=100 would.
func Percent(live, headroom int64) int {
	if live <= 0 || headroom <= 0 {
		return minPercent
	}
	p := headroom * 100 / live
	return int(min(max(p, minPercent), maxPercent))
}

// Run sets the collector's percentage from the live heap now and then
// every interval until ctx ends, and on return puts back the percentage
// it found. It returns at once when headroom is not positive.
func Run(ctx context.Context, headroom int64, every time.Duration) {
	if headroom <= 0 {
		return
	}
	sample := []metrics.Sample{{Name: liveMetric}}
	set := -1
	pace := func() {
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 {
			return
		}
		p := Percent(int64(sample[0].Value.Uint64()), headroom)
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
