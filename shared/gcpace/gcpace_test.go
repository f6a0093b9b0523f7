package gcpace

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	const mb = 1 << 20
	for _, c := range []struct {
		live, headroom int64
		want           int
	}{
		{6 * mb, 64 * mb, 1066},  // storaged serving: a small live heap
		{64 * mb, 64 * mb, 100},  // live as large as the headroom: GOGC=100
		{200 * mb, 64 * mb, 100}, // never below GOGC=100
		{1024, 64 * mb, 1600},    // a near-empty heap counts as Go's 4 MB minimum
		{0, 64 * mb, 1600},       // no collection yet
		{6 * mb, 0, minPercent},  // headroom off
		{40 * mb, 64 * mb, 160},  // a 10M-key version's indexes and filters
	} {
		if got := Percent(c.live, c.headroom); got != c.want {
			t.Errorf("Percent(%d, %d) = %d, want %d", c.live, c.headroom, got, c.want)
		}
	}
}

// TestRunSetsAndRestores runs the pacer in this process: with a live
// heap far below the headroom it must raise the percentage above 100, and
// put the old one back when stopped.
func TestRunSetsAndRestores(t *testing.T) {
	t.Setenv("GOGC", "")
	before := debug.SetGCPercent(77)
	defer debug.SetGCPercent(before)
	runtime.GC() // the live size is known after a collection
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Run(ctx, 1<<30, time.Millisecond)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for {
		p := gogc()
		if p > minPercent {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GC percent still %d, want above %d with 1 GiB of headroom", p, minPercent)
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
	if p := debug.SetGCPercent(before); p != 77 {
		t.Errorf("after Run: GC percent %d, want the 77 it found", p)
	}
}

// gogc reads the collector's percentage without setting it.
func gogc() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}

// Without headroom, or with GOGC set by the operator, Run leaves the
// collector alone and returns at once.
func TestRunOff(t *testing.T) {
	before := debug.SetGCPercent(55)
	defer debug.SetGCPercent(before)
	t.Setenv("GOGC", "")
	Run(context.Background(), 0, time.Millisecond)
	t.Setenv("GOGC", "55")
	Run(context.Background(), 1<<30, time.Millisecond)
	if p := debug.SetGCPercent(before); p != 55 {
		t.Errorf("GC percent %d, want 55 untouched", p)
	}
}
