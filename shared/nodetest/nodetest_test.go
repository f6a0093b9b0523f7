package nodetest_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"spangle/shared/nodetest"
)

// The handle against a real storaged is tested in shared/proctest, whose
// lifecycle test runs one (TestStorageProcessLifecycle).

// TestWaitActiveGivesUp: with nothing listening, WaitActive fails once
// its time is up, with the deadline and the version it waited for.
func TestWaitActiveGivesUp(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	err = nodetest.New(addr).WaitActive(context.Background(), 100*time.Millisecond, 10*time.Millisecond, "db", "v1")
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "db/v1 not ACTIVE") {
		t.Fatalf("WaitActive = %v; want the deadline and db/v1", err)
	}
}

// TestWaitFor returns once its condition holds.
func TestWaitFor(t *testing.T) {
	n := 0
	nodetest.WaitFor(t, 10*time.Second, "the third call", func() bool { n++; return n == 3 })
	if n != 3 {
		t.Fatalf("cond called %d times", n)
	}
}
