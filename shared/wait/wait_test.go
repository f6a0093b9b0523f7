package wait

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestSleepSleeps(t *testing.T) {
	start := time.Now()
	if err := Sleep(context.Background(), 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 20*time.Millisecond {
		t.Fatalf("slept %v, want at least 20ms", took)
	}
}

// A sleep far longer than the test ends with its context, saying why.
func TestSleepEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- Sleep(ctx, time.Hour) }()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled sleep returned %v", err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("sleep past the deadline returned %v", err)
	}
}

// TestPoll: Poll returns once cond holds, at once with a final error,
// and on ctx's end with the last passing error named.
func TestPoll(t *testing.T) {
	n := 0
	if err := Poll(context.Background(), time.Millisecond, func(context.Context) (bool, error) {
		n++
		return n == 3, nil
	}); err != nil || n != 3 {
		t.Fatalf("Poll = %v after %d calls; want nil after 3", err, n)
	}
	final := errors.New("never")
	if err := Poll(context.Background(), time.Hour, func(context.Context) (bool, error) { return true, final }); err != final {
		t.Fatalf("Poll = %v; want %v", err, final)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err := Poll(ctx, time.Millisecond, func(context.Context) (bool, error) { return false, errors.New("not yet") })
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "not yet") {
		t.Fatalf("Poll = %v; want the deadline and the last error", err)
	}
}

func TestEveryCallsAtOnceThenEachPeriodUntilDone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	calls := make(chan time.Time, 10)
	done := make(chan struct{})
	start := time.Now()
	go func() {
		Every(ctx, 20*time.Millisecond, func(context.Context) { calls <- time.Now() })
		close(done)
	}()
	first := <-calls
	if first.Sub(start) > 15*time.Millisecond {
		t.Errorf("first call after %v, want at once", first.Sub(start))
	}
	second := <-calls
	if d := second.Sub(first); d < 10*time.Millisecond {
		t.Errorf("second call %v after the first, want about a period", d)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Every did not return when its context ended")
	}
}
