package integration

import (
	"context"
	"testing"
	"time"

	"spangle/shared/topo"
	"spangle/shared/topo/statictopo"
)

// pollNodes is static discovery over the given storaged processes, as
// routerd's --storaged gives it, reading each node's status every 50ms.
func pollNodes(t testing.TB, nodes ...*storaged) topo.Watcher {
	urls := make([]string, len(nodes))
	for i, n := range nodes {
		urls[i] = n.url()
	}
	w, err := statictopo.New(statictopo.Options{URLs: urls, Period: 50 * time.Millisecond, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w.Poll(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = w.Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return w
}
