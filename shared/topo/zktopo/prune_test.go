package zktopo_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"spangle/shared/topo"
	"spangle/shared/topo/topotest"
	"spangle/shared/zktest"
)

// waitCount waits until the server's counter is want: watches are set
// and released by the watch loop after the events.
func waitCount(t *testing.T, srv *zktest.Server, key string, want int, what string) {
	t.Helper()
	deadline := time.Now().Add(topotest.Timeout)
	for {
		got := mntr(t, srv, key)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			out, _ := srv.FourLetter("wchp")
			t.Fatalf("%s: %s = %d, want %d; watches by path:\n%s", what, key, got, want, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Pruned versions leave the server and every mirror, and the watches
// the mirrors held on them are released: what the cluster costs does
// not grow with the versions it ever had.
func TestPruneReleasesWatches(t *testing.T) {
	srv := zktest.Start(t)
	c, w := open(t, srv.Addr()), open(t, srv.Addr())
	ctx := context.Background()
	const addr = "127.0.0.1:9300"
	if err := c.RegisterNode(ctx, topo.Node{ID: "n", Addr: addr}); err != nil {
		t.Fatal(err)
	}
	// Each mirror watches nodes/ and partitions/ once there, and waits
	// for pins/ to be created (an exists-watch).
	if _, err := c.PublishVersion(ctx, "db", "v1", topo.VersionInfo{NumPartitions: 2}); err != nil {
		t.Fatal(err)
	}
	topotest.WaitMap(t, w, "db/v1", func(m *topo.Map) bool { return m.Version("db", "v1") != nil })
	baseZnodes := mntr(t, srv, "zk_znode_count") - 1 // all but db/v1
	// Versions v1..v4 of db, each served for a while; v4's partition 1
	// is published before its info, so the mirrors also hold a data
	// watch on it until the info is written.
	for i := 1; i <= 4; i++ {
		v := "v" + strconv.Itoa(i)
		if i < 4 {
			if _, err := c.PublishVersion(ctx, "db", v, topo.VersionInfo{NumPartitions: 2}); err != nil {
				t.Fatal(err)
			}
		}
		for p := 0; p < 2; p++ {
			if err := c.PublishPartition(ctx, "db", v, p, addr); err != nil {
				t.Fatal(err)
			}
		}
	}
	mirrors := 2
	waitCount(t, srv, "zk_watch_count", mirrors*(3+1+4+1), "four versions, one without info")
	if _, err := c.PublishVersion(ctx, "db", "v4", topo.VersionInfo{NumPartitions: 2}); err != nil {
		t.Fatal(err)
	}
	waitCount(t, srv, "zk_watch_count", mirrors*(3+1+4), "four versions")

	// v1..v3 are dropped and pruned: their znodes and watches go.
	for i := 1; i <= 3; i++ {
		v := "v" + strconv.Itoa(i)
		for p := 0; p < 2; p++ {
			if err := c.UnpublishPartition(ctx, "db", v, p, addr); err != nil {
				t.Fatal(err)
			}
		}
		if gone, err := c.PruneVersion(ctx, "db", v); err != nil || !gone {
			t.Fatalf("PruneVersion(%s) = %v, %v", v, gone, err)
		}
	}
	for _, m := range []topo.Watcher{c, w} {
		topotest.WaitMap(t, m, "only v4 left", func(m *topo.Map) bool {
			return len(m.VersionNames("db")) == 1 && m.Version("db", "v4").Complete(1)
		})
	}
	waitCount(t, srv, "zk_watch_count", mirrors*(3+1+1), "v1..v3 pruned")
	// The base, db/v4 and its two replicas.
	if got := mntr(t, srv, "zk_znode_count"); got != baseZnodes+3 {
		t.Errorf("znodes after pruning = %d, want %d", got, baseZnodes+3)
	}

	// The last version goes too, and its db with it.
	for p := 0; p < 2; p++ {
		if err := c.UnpublishPartition(ctx, "db", "v4", p, addr); err != nil {
			t.Fatal(err)
		}
	}
	if gone, err := c.PruneVersion(ctx, "db", "v4"); err != nil || !gone {
		t.Fatalf("PruneVersion(v4) = %v, %v", gone, err)
	}
	waitCount(t, srv, "zk_watch_count", mirrors*3, "the db pruned")
	if got := mntr(t, srv, "zk_znode_count"); got != baseZnodes-1 {
		t.Errorf("znodes after pruning the db = %d, want %d (partitions/db gone)", got, baseZnodes-1)
	}
	for _, m := range []topo.Watcher{c, w} {
		topotest.WaitMap(t, m, "the db gone", func(m *topo.Map) bool { return len(m.DBs) == 0 })
	}
}
