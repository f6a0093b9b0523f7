package coordinator_test

import (
	"context"
	"regexp"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"spangle/shared/topo/zktopo"
	"spangle/shared/zktest"
)

var nonName = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// TestScenariosZooKeeper runs the scenarios against a real ZooKeeper,
// each in a cluster of its own on one server.
func TestScenariosZooKeeper(t *testing.T) {
	srv := zktest.Start(t)
	runScenarios(t, func(t *testing.T) backend {
		cluster := nonName.ReplaceAllString(t.Name(), "-")
		return backend{newConn: func(t *testing.T) coordConn {
			c, err := zktopo.Open(zktopo.Options{
				Servers: []string{srv.Addr()}, Cluster: cluster, SessionTimeout: 4 * time.Second,
				Logger: zaptest.NewLogger(t).Named("zk"),
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			if err := c.WaitConnected(ctx); err != nil {
				t.Fatal(err)
			}
			return c
		}}
	})
}
