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
		floor          int
		want           int
	}{
		{6 * mb, 64 * mb, DefaultFloor, 1066},   // storaged serving: a small live heap
		{64 * mb, 64 * mb, DefaultFloor, 100},   // live as large as the headroom: GOGC=100
		{200 * mb, 64 * mb, DefaultFloor, 100},  // never below GOGC=100
		{1024, 64 * mb, DefaultFloor, 1600},     // a near-empty heap counts as Go's 4 MB minimum
		{0, 64 * mb, DefaultFloor, 1600},        // no collection yet
		{6 * mb, 0, DefaultFloor, DefaultFloor}, // headroom off
		{40 * mb, 64 * mb, DefaultFloor, 160},   // a 10M-key version's indexes and filters
		{256 * mb, 32 * mb, 25, 25},             // storaged at 100M keys: a quarter of live, not all of it
		{64 * mb, 32 * mb, 25, 50},              // the headroom still wins when it is more
		{1024 * mb, 4 * mb, 0, 1},               // a floor below 1 counts as 1
	} {
		if got := Percent(c.live, c.headroom, c.floor); got != c.want {
			t.Errorf("Percent(%d, %d, %d) = %d, want %d", c.live, c.headroom, c.floor, got, c.want)
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
		Run(ctx, 1<<30, DefaultFloor, time.Millisecond)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for {
		p := gogc()
		if p > DefaultFloor {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GC percent still %d, want above %d with 1 GiB of headroom", p, DefaultFloor)
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
	Run(context.Background(), 0, DefaultFloor, time.Millisecond)
	t.Setenv("GOGC", "55")
	Run(context.Background(), 1<<30, DefaultFloor, time.Millisecond)
	if p := debug.SetGCPercent(before); p != 55 {
		t.Errorf("GC percent %d, want 55 untouched", p)
	}
}

// TestRunPacesAfterEachCollection: with an interval far beyond the test,
// the percentage still follows the live heap, recomputed after each
// collection: a live heap grown from nothing to 64 MiB brings it down
// from the start's to about the headroom's share of 64 MiB.
func TestRunPacesAfterEachCollection(t *testing.T) {
	t.Setenv("GOGC", "")
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	runtime.GC()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Run(ctx, 32<<20, 1, time.Hour)
	}()
	defer func() { cancel(); <-done }()
	time.Sleep(10 * time.Millisecond) // the first pace, from an empty heap
	start := gogc()
	live := make([][]byte, 64)
	for i := range live {
		live[i] = make([]byte, 1<<20)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		runtime.GC()
		if p := gogc(); p <= 60 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GC percent %d (started at %d), want at most 60 with 64 MiB live and 32 MiB of headroom", gogc(), start)
		}
		time.Sleep(time.Millisecond)
	}
	runtime.KeepAlive(live)
}
