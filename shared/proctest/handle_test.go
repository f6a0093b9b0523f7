package proctest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"spangle/shared/nodetest"
	"spangle/shared/wire"
)

// checkHandle reads the real storaged at addr, serving the sample data,
// through every method of shared/nodetest's handle: the lifecycle test
// below has one running, and a second storaged would cost this package's
// tests a build and a start.
func checkHandle(t *testing.T, addr string) {
	t.Helper()
	n := nodetest.New(addr)
	ctx := context.Background()
	if err := n.WaitActive(ctx, 60*time.Second, 20*time.Millisecond, "baby-names", "1"); err != nil {
		t.Fatal(err)
	}
	nodetest.WaitActive(t, time.Second, "baby-names", "1", n)
	if st, err := n.Status(ctx); err != nil || st.Mode != "standalone" || st.DBs["baby-names"].Current != "1" {
		t.Fatalf("Status = %+v, %v", st, err)
	}
	if got := n.State(ctx, "baby-names", "1"); got != wire.StateActive {
		t.Fatalf("State = %q", got)
	}
	if got := n.State(ctx, "baby-names", "2"); got != "" {
		t.Fatalf("State of a missing version = %q", got)
	}
	a, err := n.Get(ctx, "baby-names", "1881/boy")
	if err != nil || a.Code != 200 || a.Body != "John" || a.Version != "1" {
		t.Fatalf("Get 1881/boy = %+v, %v", a, err)
	}
	a, err = n.Get(ctx, "baby-names", "no-such-name")
	if err != nil || a.Code != 404 || a.Version != "1" {
		t.Fatalf("Get missing = %+v, %v", a, err)
	}
	if v, ok, err := n.Metric(ctx, "no_such_series"); err != nil || ok || v != 0 {
		t.Fatalf("Metric of a missing series = %v, %v, %v", v, ok, err)
	}
	if _, ok, err := n.Metric(ctx, "go_goroutines"); err != nil || !ok {
		t.Fatalf("Metric go_goroutines: %v, %v", ok, err)
	}
	ctx2, cancel := context.WithCancel(ctx)
	cancel()
	if err := n.WaitActive(ctx2, time.Second, time.Millisecond, "baby-names", "2"); err == nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitActive on a cancelled context = %v", err)
	}
}
