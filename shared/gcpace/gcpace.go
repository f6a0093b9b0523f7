package gcpace

import (
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// DefaultFloor is Go's default, GOGC=100: the least percentage Run sets
// for a heap whose live part is mostly pointers, which each collection
// marks (routerd's hot-key cache).
const DefaultFloor = 100

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
// scales (see scaledMetrics), and by at least floor percent of live.
//
// A floor below 100 suits a heap whose live part is large and free of
// pointers, as storaged's table indexes and bloom filters are (a few
// bytes a key, 200 MB and more at 100M keys): marking them costs nothing
// per byte, so collecting more often is cheap, while GOGC=100 would let
// the heap grow to twice their size.
func Percent(live, headroom int64, floor int) int {
	if headroom <= 0 {
		return DefaultFloor
	}
	return int(max(headroom*100/max(live, minHeap), int64(max(floor, 1))))
}

// Run sets the collector's percentage (Percent, with floor) from the live
// heap now and then every interval until ctx ends, and on return puts
// back the percentage it found. It returns at once when headroom is not positive or when the
// GOGC environment variable is set: the operator's setting wins.
func Run(ctx context.Context, headroom int64, floor int, every time.Duration) {
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
		p := Percent(live, headroom, floor)
		// Small changes are left alone: each setting recomputes the
		// collector's goal under the heap lock.
		if set < 0 || p < set*9/10 || p > set*11/10 {
			debug.SetGCPercent(p)
			set = p
		}
	}
	old := debug.SetGCPercent(DefaultFloor)
	defer debug.SetGCPercent(old)
	pace()
	// Also after every collection: the live heap can grow tenfold within
	// an interval (a process that starts loading at once), and a
	// percentage computed from a smaller live heap would let the heap
	// grow by as many times the headroom before the next look.
	collected := make(chan struct{}, 1)
	afterGC(ctx, collected)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			pace()
		case <-collected:
			pace()
		}
	}
}

// afterGC signals c (without blocking) after each garbage collection
// until ctx ends: a finalizer on an unreachable object runs once a
// collection has found it, and sets the next.
func afterGC(ctx context.Context, c chan<- struct{}) {
	s := new(gcSentinel)
	runtime.SetFinalizer(s, func(*gcSentinel) {
		if ctx.Err() != nil {
			return
		}
		select {
		case c <- struct{}{}:
		default:
		}
		afterGC(ctx, c)
	})
}

// gcSentinel is big enough not to share a tiny allocation, whose
// finalizer might wait for its neighbours.
type gcSentinel [32]byte
