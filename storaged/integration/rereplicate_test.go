package integration

import (
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"spangle/shared/zktest"
)

// testRereplicateAfter is the rereplicate_after of the re-replication
// test: short, so the test takes seconds.
const testRereplicateAfter = 2 * time.Second

// TestRereplication: three storaged processes on a real ZooKeeper; one
// (not the leader) is killed for good. Once its session has expired and
// rereplicate_after has passed, the leader assigns its partitions to the
// survivors, which copy them from each other: every partition is back
// to two live replicas, and a client trying the nodes in turn never
// fails to read a key meanwhile.
func TestRereplication(t *testing.T) {
	nodes := startRereplicatingCluster(t, 3)

	var leader string
	waitFor(t, zkDeadline, "every node naming one leader", func() bool {
		leader = ""
		for _, n := range nodes {
			st, err := n.status()
			if err != nil || st.Coordination == nil || st.Coordination.Leader == "" ||
				(leader != "" && st.Coordination.Leader != leader) {
				return false
			}
			leader = st.Coordination.Leader
		}
		return true
	})
	var dead *node
	var live []*node
	for _, n := range nodes {
		if n.addr != leader && dead == nil {
			dead = n
		} else {
			live = append(live, n)
		}
	}

	// A client that tries every node in turn, as a router tries replicas.
	var reads, failed atomic.Int64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i = (i + 1) % testKeys {
			select {
			case <-stop:
				return
			default:
			}
			ok := false
			for _, n := range nodes {
				if code, body, _, err := n.get(testDB, keyOf(i)); err == nil && code == 200 && body == valueOf(i, "v1") {
					ok = true
					break
				}
			}
			reads.Add(1)
			if !ok {
				failed.Add(1)
			}
		}
	}()

	killed := time.Now()
	dead.Kill()
	waitFor(t, zkDeadline, "both survivors serving every partition", func() bool {
		for _, n := range live {
			st, err := n.status()
			if err != nil || st.Cluster == nil || len(st.DBs[testDB].Versions["v1"].Partitions) != testParts {
				return false
			}
			v := st.Cluster.Version(testDB, "v1")
			for _, r := range v.Replicas {
				if len(r) != testRepl || slices.Contains(r, dead.addr) {
					return false
				}
			}
		}
		return true
	})
	took := time.Since(killed)
	close(stop)
	<-done
	if failed.Load() > 0 || reads.Load() == 0 {
		t.Errorf("%d of %d reads failed while re-replicating", failed.Load(), reads.Load())
	}
	st, err := live[0].status()
	if err != nil || st.Coordination == nil || st.Coordination.Epoch < 1 || st.Coordination.DecidedBy != leader {
		t.Errorf("coordination status after re-replication: %+v, %v", st.Coordination, err)
	}
	t.Logf("full replication again %v after the kill (session timeout %v + rereplicate_after %v + copies); %d reads, none failed",
		took.Round(10*time.Millisecond), testSessionTimeout, testRereplicateAfter, reads.Load())
}

// TestLeaderKilledDuringRereplication: four storaged processes; a node
// is killed, and as soon as the leader has committed the re-replication
// the leader is killed too. The next leader finishes the job, giving
// the old leader's copies away as well: copies no live peer holds any
// more are built from the source. Every partition ends at two replicas
// on the two survivors.
func TestLeaderKilledDuringRereplication(t *testing.T) {
	nodes := startRereplicatingCluster(t, 4)
	byAddr := map[string]*node{}
	for _, n := range nodes {
		byAddr[n.addr] = n
	}
	leaderOf := func(ns []*node) string {
		who := ""
		for _, n := range ns {
			st, err := n.status()
			if err != nil || st.Coordination == nil || st.Coordination.Leader == "" || (who != "" && st.Coordination.Leader != who) {
				return ""
			}
			who = st.Coordination.Leader
		}
		return who
	}
	var first string
	waitFor(t, zkDeadline, "every node naming one leader", func() bool { first = leaderOf(nodes); return first != "" })
	var victim *node
	for _, n := range nodes {
		if n.addr != first {
			victim = n
			break
		}
	}
	victim.Kill()
	lead := byAddr[first]
	waitFor(t, zkDeadline, "the first leader's re-replication committed", func() bool {
		st, err := lead.status()
		return err == nil && st.Coordination != nil && st.Coordination.Epoch >= 1
	})
	lead.Kill()
	var live []*node
	for _, n := range nodes {
		if n != victim && n != lead {
			live = append(live, n)
		}
	}
	var next string
	waitFor(t, zkDeadline, "a new leader", func() bool { next = leaderOf(live); return next != "" && next != first })
	waitFor(t, zkDeadline, "both survivors serving every partition", func() bool {
		for _, n := range live {
			st, err := n.status()
			if err != nil || st.Cluster == nil || len(st.DBs[testDB].Versions["v1"].Partitions) != testParts {
				return false
			}
			for _, r := range st.Cluster.Version(testDB, "v1").Replicas {
				if len(r) != testRepl || slices.Contains(r, victim.addr) || slices.Contains(r, lead.addr) {
					return false
				}
			}
		}
		return true
	})
	st, err := live[0].status()
	if err != nil || st.Coordination.DecidedBy != next || st.Coordination.Epoch < 2 {
		t.Errorf("after the takeover: %+v, %v; want the last decision by %s", st.Coordination, err, next)
	}
	for _, n := range live {
		for i := 0; i < testKeys; i += 17 {
			if code, body, _, err := n.get(testDB, keyOf(i)); err != nil || code != 200 || body != valueOf(i, "v1") {
				t.Fatalf("%s: %s -> %d %q %v", n.addr, keyOf(i), code, body, err)
			}
		}
	}
}

// startRereplicatingCluster starts a real ZooKeeper and n storaged with
// a short rereplicate_after on one source root, and publishes version v1
// there once every node is registered.
func startRereplicatingCluster(t *testing.T, n int) []*node {
	t.Helper()
	zks := zktest.Start(t)
	root := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "storaged.toml")
	toml := "[sharding]\nrereplicate_after = \"" + testRereplicateAfter.String() + "\"\n"
	if err := os.WriteFile(cfg, []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	var nodes []*node
	for i := 0; i < n; i++ {
		nodes = append(nodes, startNode(t, zks.Addr(), root, "--config", cfg))
	}
	addVersionWhenRegistered(t, zks, root, "v1", nodes)
	return nodes
}
