package zktopo

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"go.uber.org/zap/zaptest"

	"spangle/shared/topo"
	"spangle/shared/topo/topotest"
	"spangle/shared/zktest"
)

// TestBatchReportsVersionsFoundThere: when another node created some of
// the version entries a batch holds (every node publishes the same
// versions at a start), the batch creates the others and records the
// ones found there in vfound, so that their callers read them instead of
// creating each alone under the write semaphore (two round trips each,
// one after another: 10 s for 500 versions on a loaded machine).
func TestBatchReportsVersionsFoundThere(t *testing.T) {
	srv := zktest.Start(t)
	openConn := func() *Conn {
		c, err := Open(Options{Servers: []string{srv.Addr()}, Cluster: "found", Logger: zaptest.NewLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		ctx, cancel := context.WithTimeout(context.Background(), topotest.Timeout)
		defer cancel()
		if err := c.WaitConnected(ctx); err != nil {
			t.Fatal(err)
		}
		return c
	}
	a, b := openConn(), openConn()
	ctx := context.Background()
	const dbs = 20
	for d := 0; d < dbs; d += 2 { // a is first with the even dbs
		if _, err := a.PublishVersion(ctx, fmt.Sprintf("db%02d", d), "v1", topo.VersionInfo{NumPartitions: 8}); err != nil {
			t.Fatal(err)
		}
	}
	// b queues every db's version as PublishVersion does when its read
	// found none (a created its entries after b looked).
	info := topo.VersionInfo{NumPartitions: 8}
	data, err := json.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	b.mu.Lock()
	for d := 0; d < dbs; d++ {
		p := b.paths.Version(fmt.Sprintf("db%02d", d), "v1")
		b.infos[p] = info
		b.pending[p] = true
		b.queueVersionLocked(p, data, true)
	}
	b.mu.Unlock()
	b.sem <- struct{}{}
	b.flushQueued()
	<-b.sem
	b.mu.Lock()
	defer b.mu.Unlock()
	for d := 0; d < dbs; d++ {
		p := b.paths.Version(fmt.Sprintf("db%02d", d), "v1")
		if even := d%2 == 0; b.vfound[p] != even || b.vdone[p] == even {
			t.Errorf("%s: found %v, created %v; want found %v", p, b.vfound[p], b.vdone[p], even)
		}
	}
}
