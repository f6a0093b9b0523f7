package daemon

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"spangle/shared/partitioner"
	"spangle/shared/placement"
	"spangle/shared/seqfile"
	"spangle/shared/topo"
	"spangle/shared/topo/memtopo"
	"spangle/storaged/config"
	"spangle/storaged/coordinator"
	"spangle/storaged/internal/testutil"
)

// TestCoordinationInProcess runs three daemons on the in-memory
// coordination service: one leads, every node's status page and ELECT
// answer name it with the same ring version, and when a node dies for
// good the leader commits an assignment without it after
// rereplicate_after.
func TestCoordinationInProcess(t *testing.T) {
	root := t.TempDir()
	srv := memtopo.NewServer()
	var (
		ds      []*Daemon
		cancels []context.CancelFunc
		shards  []string
	)
	for i := 0; i < 3; i++ {
		d, cancel := startMemNode(t, srv, root, func(cfg *config.Config) { cfg.Sharding.RereplicateAfter = 500 * time.Millisecond })
		ds, cancels, shards = append(ds, d), append(cancels, cancel), append(shards, d.Addr)
	}
	watch := srv.Watcher()
	defer watch.Close()
	waitFor(t, "three registered nodes", func() bool { return len(watch.Map().Nodes) == 3 })
	recs := testutil.Records(300, "v1")
	testutil.WriteVersion(t, root, "db", "v1", 6, testutil.Sharded, seqfile.WriterOptions{}, recs)
	for _, d := range ds {
		d.Refresh()
	}
	for _, d := range ds {
		waitFor(t, d.Addr+" active", func() bool { return d.Versions.CurrentVersion("db") == "v1" })
	}

	// Every status page names the same leader, which alone says it leads.
	var leader string
	waitFor(t, "every node naming one leader", func() bool {
		leading := 0
		leader = ""
		for _, d := range ds {
			c := statusOf(t, d.Addr).Coordination
			if c == nil || c.Leader == "" || (leader != "" && c.Leader != leader) {
				return false
			}
			leader = c.Leader
			if c.Leading {
				leading++
			}
		}
		return leading == 1
	})
	if !slices.Contains(shards, leader) {
		t.Fatalf("leader %q is not one of %v", leader, shards)
	}
	if code, page, _ := httpGet(t, "http://"+ds[0].Addr+"/"); code != http.StatusOK ||
		!strings.Contains(page, "<h2>Coordination</h2>") || !strings.Contains(page, "Leader: <b>"+leader+"</b>") {
		t.Errorf("the status page does not show the leader %s:\n%s", leader, page)
	}

	// ELECT: the same leader and ring version everywhere, index 0 as the
	// ring deals it, and each node's own state of the partition.
	holders := placement.Holders(shards, 6, 2)
	var ring int64
	for i, d := range ds {
		resp, err := http.Get("http://" + d.Addr + "/_elect/db/v1/0")
		if err != nil {
			t.Fatal(err)
		}
		var v coordinator.Vote
		err = json.NewDecoder(resp.Body).Decode(&v)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("ELECT on %s: %s, %v", d.Addr, resp.Status, err)
		}
		if i == 0 {
			ring = v.RingVersion
		}
		want := coordinator.StateNotFound
		if slices.Contains(holders[0], d.Addr) {
			want = coordinator.StatePublished
		}
		if v.Leader != leader || v.RingVersion != ring || v.Index0 != holders[0][0] || v.State != want || v.Node != d.Addr {
			t.Errorf("ELECT on %s = %+v; want leader %s, ring %d, index0 %s, state %s", d.Addr, v, leader, ring, holders[0][0], want)
		}
	}
	if code, _, _ := httpGet(t, "http://"+ds[0].Addr+"/_elect/db/v1/x"); code != http.StatusBadRequest {
		t.Errorf("ELECT with a bad partition = %d, want 400", code)
	}

	// A follower dies for good: after rereplicate_after the leader
	// commits an assignment that leaves it out, the others copy its
	// partitions from each other, and a client that tries the replicas
	// the map names never fails meanwhile.
	victim := slices.IndexFunc(ds, func(d *Daemon) bool { return d.Addr != leader })
	dead := ds[victim].Addr
	stopReads := make(chan struct{})
	readsDone := make(chan [2]int)
	go func() { readsDone <- readLoop(watch, recs, stopReads) }()
	cancels[victim]()
	ds[victim].Wait()
	lead := ds[slices.Index(shards, leader)]
	waitFor(t, "an assignment without the dead node", func() bool {
		c := statusOf(t, lead.Addr).Coordination
		return c != nil && c.Epoch >= 1 && c.DecidedBy == leader
	})
	reader := srv.Conn()
	defer reader.Close()
	as, err := reader.Assignments(context.Background())
	if err != nil || len(as) != 1 {
		t.Fatalf("assignments = %+v, %v", as, err)
	}
	for p, hs := range as[0].Replicas {
		if len(hs) != 2 || slices.Contains(hs, dead) {
			t.Fatalf("partition %d assigned to %v (dead %s)", p, hs, dead)
		}
	}
	waitFor(t, "every partition back at 2 replicas", func() bool {
		v := watch.Map().Version("db", "v1")
		for _, r := range v.Replicas {
			if len(r) != 2 || slices.Contains(r, dead) {
				return false
			}
		}
		return true
	})
	close(stopReads)
	res := <-readsDone
	if res[0] == 0 || res[1] > 0 {
		t.Errorf("%d reads, %d failed while re-replicating", res[0], res[1])
	}
	// The survivors serve every key of the partitions they gained.
	for _, d := range ds {
		if d.Addr == dead {
			continue
		}
		held := d.Versions.Views().HeldPartitions("db", "v1")
		if len(held) != 6 {
			t.Errorf("%s holds %v, want all 6 partitions", d.Addr, held)
		}
		for i := 0; i < len(recs); i += 7 {
			if code, body, _ := httpGet(t, "http://"+d.Addr+"/db/"+string(recs[i].Key)); code != http.StatusOK || body != string(recs[i].Value) {
				t.Fatalf("%s: key %q = %d %q", d.Addr, recs[i].Key, code, body)
			}
		}
	}
	t.Logf("%d reads during re-replication, none failed", res[0])
}

// readLoop reads keys as a router would until stop closes: each through
// the replicas the map names for its partition, failing only when none
// answers. It returns the reads and the failures.
func readLoop(w interface{ Map() *topo.Map }, recs []testutil.Record, stop <-chan struct{}) [2]int {
	return readLoopN(w, recs, 6, stop)
}

// readLoopN is readLoop for a version of n partitions.
func readLoopN(w interface{ Map() *topo.Map }, recs []testutil.Record, n int, stop <-chan struct{}) [2]int {
	client := &http.Client{Timeout: 5 * time.Second}
	reads, failed := 0, 0
	for i := 0; ; i = (i + 1) % len(recs) {
		select {
		case <-stop:
			return [2]int{reads, failed}
		default:
		}
		key := recs[i].Key
		ok := false
		for _, addr := range w.Map().Replicas("db", "v1", partitioner.Partition(key, n)) {
			resp, err := client.Get("http://" + addr + "/db/" + string(key))
			if err != nil {
				continue
			}
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				ok = true
				break
			}
		}
		reads++
		if !ok {
			failed++
		}
	}
}
