package retry

import (
	"testing"
	"time"
)

func TestDelay(t *testing.T) {
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second,
		32 * time.Second, 64 * time.Second, 128 * time.Second, 256 * time.Second, 5 * time.Minute, 5 * time.Minute}
	for i, w := range want {
		if got := Delay(i+1, DefaultMin, DefaultMax); got != w {
			t.Errorf("Delay(%d) = %s, want %s", i+1, got, w)
		}
	}
	if got := Delay(1000, DefaultMin, DefaultMax); got != DefaultMax {
		t.Errorf("Delay(1000) = %s, want the bound", got)
	}
}

// A Backoff counts failures in a row and schedules each retry from the
// failure's time; the zero value schedules none.
func TestBackoff(t *testing.T) {
	var b Backoff
	if b.Scheduled() {
		t.Fatal("the zero Backoff schedules a retry")
	}
	now := time.Unix(1e9, 0)
	if d := b.Fail(now, time.Second, 3*time.Second); d != time.Second || !b.At.Equal(now.Add(time.Second)) {
		t.Fatalf("first failure: pause %s, at %s", d, b.At)
	}
	if d := b.Fail(now, time.Second, 3*time.Second); d != 2*time.Second || b.Failures != 2 {
		t.Fatalf("second failure: pause %s after %d failures", d, b.Failures)
	}
	if d := b.Fail(now, time.Second, 3*time.Second); d != 3*time.Second {
		t.Fatalf("third failure: pause %s, want the bound", d)
	}
	if !b.Scheduled() || b.Left(now) != 3*time.Second || b.Left(now.Add(4*time.Second)) > 0 {
		t.Fatalf("left: %s at the failure, %s after it is due", b.Left(now), b.Left(now.Add(4*time.Second)))
	}
}
