package zktopo_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"

	"spangle/shared/topo"
	"spangle/shared/topo/topotest"
	"spangle/shared/topo/zktopo"
	"spangle/shared/zktest"
)

// rejected returns spangle_zk_entries_rejected_total{kind} of reg.
func rejected(t *testing.T, reg *prometheus.Registry, kind string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "spangle_zk_entries_rejected_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "kind" && l.GetValue() == kind {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// waitRejected waits until reg counts at least n rejections of kind.
func waitRejected(t *testing.T, reg *prometheus.Registry, kind string, n float64) {
	t.Helper()
	deadline := time.Now().Add(topotest.Timeout)
	for rejected(t, reg, kind) < n {
		if time.Now().After(deadline) {
			t.Fatalf("spangle_zk_entries_rejected_total{kind=%q} = %v, want at least %v", kind, rejected(t, reg, kind), n)
		}
		time.Sleep(10 * time.Millisecond) // a metric has no event to wait on
	}
}

// Numbers written into znodes by anyone are bounded before anything is
// allocated for them: a version entry claiming more than MaxPartitions
// partitions (a billion made every daemon allocate gigabytes at each map
// rebuild), a replica entry of a partition beyond the bound and a node
// entry that does not parse are ignored, named in a warning and
// counted; the rest of the cluster is mirrored as before; deleting the
// bad version entry and creating it again properly brings the version
// back.
func TestBadEntriesIgnoredAndCounted(t *testing.T) {
	srv := zktest.Start(t)
	raw := srv.Raw(t)
	paths := topo.Paths{Cluster: cluster(t)}
	reg := prometheus.NewRegistry()
	w, err := zktopo.OpenWatcher(zktopo.Options{
		Servers: []string{srv.Addr()}, Cluster: cluster(t), SessionTimeout: sessionTimeout,
		Logger: zaptest.NewLogger(t), Registerer: reg,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	c := open(t, srv.Addr())
	ctx := context.Background()
	const addr = "127.0.0.1:9300"
	if err := c.RegisterNode(ctx, topo.Node{ID: "n", Addr: addr}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PublishVersion(ctx, "good", "v1", topo.VersionInfo{NumPartitions: 2}); err != nil {
		t.Fatal(err)
	}

	raw.Put(paths.Version("bad", "v1"), []byte(fmt.Sprintf(`{"num_partitions":%d}`, topo.MaxPartitions+1)))
	raw.Put(paths.Version("bad", "v2"), []byte(`{"num_partitions":1000000000}`))
	raw.Put(paths.Version("bad", "v3"), []byte(`{"num_partitions":"many"}`))
	raw.Put(paths.Version("good", "v1")+"/"+topo.ReplicaName(topo.MaxPartitions, addr), nil)
	raw.Put(paths.Version("good", "v1")+"/"+topo.ReplicaName(1, addr), nil)
	raw.Put(paths.Nodes()+"/s@127.0.0.1:9301", []byte(`{"id": 7}`))

	waitRejected(t, reg, "version", 3)
	waitRejected(t, reg, "replica", 1)
	waitRejected(t, reg, "node", 1)
	m := topotest.WaitMap(t, w, "the valid entries", func(m *topo.Map) bool {
		return len(m.Replicas("good", "v1", 1)) == 1 && len(m.Nodes) == 1
	})
	if m.DBs["bad"] != nil {
		t.Fatalf("versions with a partition count out of bounds are in the map: %+v", m.DBs["bad"])
	}
	if v := m.Version("good", "v1"); len(v.Replicas) != 2 {
		t.Fatalf("good/v1 has %d partitions in the map, want 2", len(v.Replicas))
	}
	if _, ok := m.Nodes["127.0.0.1:9301"]; ok {
		t.Fatal("a node entry whose data does not parse is in the map")
	}

	// Removing the bad entry and writing it properly restores it.
	raw.Delete(paths.Version("bad", "v1"))
	raw.Put(paths.Version("bad", "v1"), []byte(`{"num_partitions":3}`))
	raw.Put(paths.Version("bad", "v1")+"/"+topo.ReplicaName(2, addr), nil)
	topotest.WaitMap(t, w, "bad/v1 written again within bounds", func(m *topo.Map) bool {
		return len(m.Replicas("bad", "v1", 2)) == 1 && len(m.Version("bad", "v1").Replicas) == 3
	})
	// So does rewriting one in place.
	raw.Put(paths.Version("bad", "v2"), []byte(`{"num_partitions":1}`))
	topotest.WaitMap(t, w, "bad/v2 rewritten within bounds", func(m *topo.Map) bool {
		return m.Version("bad", "v2") != nil && m.Version("bad", "v2").NumPartitions == 1
	})
	if got := rejected(t, reg, "version"); got != 3 {
		t.Errorf("spangle_zk_entries_rejected_total{kind=version} = %v, want 3 (each bad entry once)", got)
	}
}

// A node publishing a version whose entry holds info out of bounds
// writes its own over it, as over an entry created without info.
func TestPublishVersionOverwritesInvalidInfo(t *testing.T) {
	srv := zktest.Start(t)
	raw := srv.Raw(t)
	paths := topo.Paths{Cluster: cluster(t)}
	raw.Put(paths.Version("db", "v1"), []byte(`{"num_partitions":1000000000}`))
	c := open(t, srv.Addr())
	want := topo.VersionInfo{NumPartitions: 4}
	got, err := c.PublishVersion(context.Background(), "db", "v1", want)
	if err != nil || got.NumPartitions != 4 {
		t.Fatalf("PublishVersion = %+v, %v; want %+v", got, err, want)
	}
	topotest.WaitMap(t, c, "db/v1 with its info", func(m *topo.Map) bool {
		return m.Version("db", "v1") != nil && m.Version("db", "v1").NumPartitions == 4
	})
}

// Partitions registered at once (a node starting with hundreds of
// versions) go to the server in a few multi-ops, not one request each:
// the requests the server receives stay well below the partitions.
func TestPublishPartitionsBatched(t *testing.T) {
	srv := zktest.Start(t)
	c := open(t, srv.Addr())
	ctx := context.Background()
	const addr, dbs, parts = "127.0.0.1:9500", 50, 8
	for d := range dbs {
		if _, err := c.PublishVersion(ctx, fmt.Sprintf("db%d", d), "v1", topo.VersionInfo{NumPartitions: parts}); err != nil {
			t.Fatal(err)
		}
	}
	topotest.WaitMap(t, c, "every version", func(m *topo.Map) bool { return len(m.DBs) == dbs })
	before := mntr(t, srv, "zk_packets_received")
	errs := make(chan error, dbs*parts)
	for d := range dbs {
		for p := range parts {
			go func() { errs <- c.PublishPartition(ctx, fmt.Sprintf("db%d", d), "v1", p, addr) }()
		}
	}
	for range dbs * parts {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	topotest.WaitMap(t, c, "every partition", func(m *topo.Map) bool {
		for d := range dbs {
			if !m.Version(fmt.Sprintf("db%d", d), "v1").Complete(1) {
				return false
			}
		}
		return true
	})
	got := mntr(t, srv, "zk_packets_received") - before
	t.Logf("%d partitions registered with %d requests (listings of the watch included)", dbs*parts, got)
	if got >= dbs*parts {
		t.Fatalf("%d partitions took %d requests, want fewer than one each", dbs*parts, got)
	}
}
