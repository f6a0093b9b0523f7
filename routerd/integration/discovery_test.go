package integration

import (
	"context"
	"net/http"
	"testing"
	"time"

	"spangle/routerd/config"
	"spangle/shared/partitioner"
	"spangle/shared/topo"
	"spangle/shared/topo/statictopo"
	"spangle/shared/topo/zktopo"
	"spangle/shared/wire"
	"spangle/shared/zktest"
)

// pollNodes is static discovery over the given storaged processes, as
// routerd's --storaged gives it, reading each node's status every 50ms.
// A node that misses one read leaves the map, so a read gets seconds: on
// a loaded machine a status page can take a few hundred ms.
func pollNodes(t testing.TB, nodes ...*storaged) topo.Watcher {
	urls := make([]string, len(nodes))
	for i, n := range nodes {
		urls[i] = n.url()
	}
	w, err := statictopo.New(statictopo.Options{URLs: urls, Period: 50 * time.Millisecond, Timeout: 5 * time.Second})
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

// TestZooKeeperDiscovery runs routerd with --zk against a real ZooKeeper
// in which two storaged nodes and their partitions are registered, and
// checks that it routes by that registry and keeps doing so while
// ZooKeeper is down.
func TestZooKeeperDiscovery(t *testing.T) {
	zks := zktest.Start(t)
	root := source(t, "v1")
	a, b := startStoraged(t, root), startStoraged(t, root)
	// The registry a cluster would write, one session per node: a holds
	// the even partitions, b the odd ones.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	holder := map[int]string{}
	for i, n := range []*storaged{a, b} {
		var held []int
		for p := i; p < testParts; p += 2 {
			holder[p] = n.addr
			held = append(held, p)
		}
		register(ctx, t, zktopo.Options{Servers: []string{zks.Addr()}, Cluster: "rt", SessionTimeout: 5 * time.Second}, n.addr, held)
	}

	cfg := config.Default()
	cfg.ZK.Servers = []string{zks.Addr()}
	cfg.Sharding.ClusterName = "rt"
	cfg.ZK.SessionTimeout = 5 * time.Second
	cfg.CacheSize = 0
	cfg.ProxyTimeout = failoverTimeout
	rd := startRouterd(t, cfg, nil, testDB)

	client := &http.Client{Timeout: 10 * time.Second}
	check := func(when string) {
		t.Helper()
		for i := 0; i < 200; i += 7 {
			key := keyName(i)
			code, body, hdr, _ := get(t, client, rd.base+"/"+testDB+"/"+key)
			if code != 200 || body != valueOf("v1", key) {
				st := rd.r.Server().Status(testDB)
				t.Fatalf("%s: GET %s = %d %q; status %+v", when, key, code, body, st)
			}
			p := partitioner.Partition([]byte(key), testParts)
			if got := hdr.Get(wire.HeaderProxiedTo); got != holder[p] {
				t.Fatalf("%s: %s (partition %d) answered by %s, registered holder %s", when, key, p, got, holder[p])
			}
		}
	}
	check("with ZooKeeper up")
	zks.Stop()
	check("with ZooKeeper down")
	zks.Restart()
	check("after ZooKeeper came back")
}

// register writes, through its own session opened with opts (closed when
// the test ends), what a storaged at addr holding partitions held of
// testDB v1 registers: its node, the version and each partition.
func register(ctx context.Context, t *testing.T, opts zktopo.Options, addr string, held []int) {
	registerVersion(ctx, t, opts, addr, "v1", held)
}

// registerVersion is register for another version of testDB.
func registerVersion(ctx context.Context, t *testing.T, opts zktopo.Options, addr, version string, held []int) {
	t.Helper()
	reg, err := zktopo.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	if err := reg.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	if err := reg.RegisterNode(ctx, topo.Node{ID: addr, Addr: addr}); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.PublishVersion(ctx, testDB, version, topo.VersionInfo{NumPartitions: testParts}); err != nil {
		t.Fatal(err)
	}
	for _, p := range held {
		if err := reg.PublishPartition(ctx, testDB, version, p, addr); err != nil {
			t.Fatal(err)
		}
	}
}
