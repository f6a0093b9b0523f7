package daemon

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"spangle/shared/zktest"
	"spangle/storaged/config"
	"spangle/storaged/internal/testutil"
)

// TestCleanClusterStartAndStopLogNoWarnings: the first connect to
// ZooKeeper at a start and the hang-up at a clean stop are normal events,
// logged at info, never as warnings.
func TestCleanClusterStartAndStopLogNoWarnings(t *testing.T) {
	zs := zktest.Start(t)
	td := testutil.TestData(t)
	cfg := config.Default()
	cfg.Source = "file://" + filepath.Join(td, "healthy")
	cfg.LocalStore = t.TempDir()
	cfg.Bind = "127.0.0.1:0"
	cfg.ZK.Servers = []string{zs.Addr()}
	cfg.Sharding.Enabled = true
	cfg.Sharding.Replication = 1
	cfg.Sharding.TimeToConverge = 500 * time.Millisecond
	core, logs := observer.New(zap.InfoLevel)
	ctx, cancel := context.WithCancel(context.Background())
	d, err := Start(ctx, cfg, zap.New(core))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "healthy", func() bool { c, _, _ := httpGet(t, "http://"+d.Addr+"/healthz"); return c == 200 })
	cancel()
	d.Wait()
	for _, e := range logs.All() {
		if e.Level >= zap.WarnLevel {
			t.Errorf("a clean start and stop logged %s %q %v", e.Level, e.Message, e.ContextMap())
		}
	}
	if logs.FilterMessageSnippet("registered in the cluster").Len() == 0 && logs.FilterMessageSnippet("registering once").Len() == 0 {
		t.Error("no registration logged")
	}
}
