package integration

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"spangle/routerd/config"
	"spangle/shared/topo"
	"spangle/shared/topo/zktopo"
	"spangle/shared/zktest"
)

// waitMap waits until w's map satisfies cond, which says what is still
// missing ("" when nothing is).
func waitMap(t *testing.T, w topo.Watcher, d time.Duration, cond func(*topo.Map) string) *topo.Map {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var rev uint64
	last := "no map yet"
	for {
		m, err := w.Wait(ctx, rev)
		if err != nil {
			t.Fatalf("after %v: %s (%v)", d, last, err)
		}
		rev = m.Revision
		if last = cond(m); last == "" {
			return m
		}
	}
}

// fullyReplicated says what keeps every partition of db's version from
// having at least want registered replicas.
func fullyReplicated(db, version string, want int) func(*topo.Map) string {
	return func(m *topo.Map) string {
		v := m.Version(db, version)
		if v == nil {
			return fmt.Sprintf("%s %s not in the map", db, version)
		}
		for p := 0; p < v.NumPartitions; p++ {
			if n := len(m.Replicas(db, version, p)); n < want {
				return fmt.Sprintf("partition %d has %d replicas, want %d", p, n, want)
			}
		}
		return ""
	}
}

// startCluster runs n storaged nodes of cluster on source and returns
// them with a watcher of the cluster that has seen all of them register.
func startCluster(t *testing.T, zkAddr, cluster, source string, n int) ([]*storaged, topo.Watcher) {
	t.Helper()
	nodes := make([]*storaged, n)
	for i := range nodes {
		nodes[i] = startClusterStoraged(t, zkAddr, cluster, source)
	}
	return nodes, watchRegistered(t, zkAddr, cluster, nodes)
}

// watchRegistered watches the cluster's map in ZooKeeper at zkAddr, closed
// at the test's end, and waits until every node is registered, so that a
// version written next is dealt over all of them.
func watchRegistered(t *testing.T, zkAddr, cluster string, nodes []*storaged) topo.Watcher {
	t.Helper()
	w, err := zktopo.OpenWatcher(zktopo.Options{Servers: []string{zkAddr}, Cluster: cluster})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	waitMap(t, w, time.Minute, func(m *topo.Map) string {
		if len(m.Nodes) != len(nodes) {
			return fmt.Sprintf("%d nodes registered, want %d", len(m.Nodes), len(nodes))
		}
		return ""
	})
	return w
}

// rescanAll has every node re-scan its source (SIGHUP).
func rescanAll(nodes []*storaged) {
	for _, n := range nodes {
		n.Signal(syscall.SIGHUP)
	}
}

// zkRouterdConfig is a routerd discovering the cluster in ZooKeeper at
// zkAddr, with no cache, so that every read reaches a storaged.
func zkRouterdConfig(zkAddr, cluster string) config.Config {
	cfg := config.Default()
	cfg.ZK.Servers = []string{zkAddr}
	cfg.Sharding.ClusterName = cluster
	cfg.CacheSize = 0
	cfg.ProxyTimeout = failoverTimeout
	return cfg
}

// TestKill9DuringReadsOnZooKeeper: three storaged processes in cluster
// mode (replication 2) register in a real ZooKeeper; routerd discovers
// them there (--zk). While 8 readers loop over all keys, one storaged is
// killed with SIGKILL: it stays in ZooKeeper until its session expires,
// so routerd keeps meeting a dead replica for seconds, then the map drops
// it. No read may fail, and hedging is off, so failover alone saves them.
// Before the readers start, routerd's status page, opened in Chromium,
// must show ZooKeeper's partition map and every node.
func TestKill9DuringReadsOnZooKeeper(t *testing.T) {
	zks := zktest.Start(t)
	const cluster = "rk"
	root := t.TempDir()
	nodes, w := startCluster(t, zks.Addr(), cluster, root, 3)
	writeVersion(t, root, testDB, "v1", testParts, testKeys)
	rescanAll(nodes)
	waitMap(t, w, 2*time.Minute, fullyReplicated(testDB, "v1", 2))

	cfg := zkRouterdConfig(zks.Addr(), cluster)
	cfg.ProxyStageTimeout = 100 * time.Millisecond
	cfg.HedgeBudget = 0
	rd := startRouterd(t, cfg, nil, testDB)
	// The status page, in a real Chromium, shows the map ZooKeeper has.
	checkStatusPage(t, rd, w.Map(), testDB, "v1")

	victim := nodes[1]
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan []*readerStats)
	go func() { done <- readers(ctx, 8, rd.base, testDB, testKeys) }()
	time.Sleep(time.Second)
	killed := time.Now()
	victim.Kill()
	// Read on while the dead node is still registered and after its
	// session expired and it left the map.
	waitMap(t, w, time.Minute, func(m *topo.Map) string {
		if _, ok := m.Nodes[victim.addr]; ok {
			return "the killed node is still registered"
		}
		return ""
	})
	gone := time.Since(killed)
	time.Sleep(time.Second)
	cancel()
	rs := <-done
	reads, failures, samples, _, _ := total(rs)
	if failures > 0 {
		t.Fatalf("%d of %d reads failed after kill -9 of a replica: %v", failures, reads, samples)
	}
	if h := rd.metric(t, "spangle_routerd_hedges_started_total"); h != 0 {
		t.Fatalf("%v hedges with hedging off", h)
	}
	t.Logf("%d reads, none failed; the killed node left ZooKeeper's map after %v; breaker transitions %v",
		reads, gone.Round(10*time.Millisecond), rd.metric(t, "spangle_routerd_breaker_transitions_total"))
}
