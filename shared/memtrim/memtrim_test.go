package memtrim

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Requests that come while a trim waits out its interval are one trim.
func TestTrimmerCoalesces(t *testing.T) {
	const interval = 100 * time.Millisecond
	tr := New(Options{Interval: interval})
	var n atomic.Int64
	tr.trimmed = func() { n.Add(1) }
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tr.Run(ctx)
	}()
	waitFor := func(want int64) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); n.Load() < want; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d trims, want %d", n.Load(), want)
			}
		}
	}
	waitFor(1) // the one at start
	for range 10 {
		tr.Request()
	}
	waitFor(2)
	time.Sleep(3 * interval)
	if got := n.Load(); got != 2 {
		t.Fatalf("%d trims after 1 + 10 requests at once, want 2", got)
	}
	tr.Request()
	waitFor(3)
	cancel()
	wg.Wait()
}
