package daemon

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"spangle/shared/partitioner"
	"spangle/shared/placement"
	"spangle/shared/seqfile"
	"spangle/shared/topo/memtopo"
	"spangle/shared/wire"
	"spangle/storaged/config"
	"spangle/storaged/internal/testutil"
)

func statusOf(t *testing.T, addr string) wire.NodeStatus {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+addr+"/", nil)
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st wire.NodeStatus
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

// startMemNode starts a cluster node in process on root, on a free port,
// coordinated through srv, deciding 300 ms after the node list settles
// and without fsync; configure, if not nil, changes its configuration
// first. The node stops when the test ends, or earlier by the cancel
// function returned.
func startMemNode(t *testing.T, srv *memtopo.Server, root string, configure func(*config.Config)) (*Daemon, context.CancelFunc) {
	t.Helper()
	cfg := config.Default()
	cfg.Source, cfg.LocalStore, cfg.Bind = root, t.TempDir(), "127.0.0.1:0"
	cfg.ZK.Servers = []string{"unused:2181"}
	cfg.Sharding.TimeToConverge = 300 * time.Millisecond
	cfg.LevelDB.NoSync = true
	if configure != nil {
		configure(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	d, err := StartWith(ctx, cfg, zaptest.NewLogger(t), Options{Conn: srv.Conn()})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); d.Wait() })
	return d, cancel
}

// TestClusterModeInProcess runs three daemons in cluster mode on the
// in-memory coordination service: each loads what the ring deals it,
// answers 421 for the rest, shows the cluster map, and activates a
// version only once every partition is served somewhere.
func TestClusterModeInProcess(t *testing.T) {
	root := t.TempDir()
	recs := testutil.Records(600, "v1")
	srv := memtopo.NewServer()
	var ds []*Daemon
	var shards []string
	for i := 0; i < 3; i++ {
		d, _ := startMemNode(t, srv, root, nil)
		ds = append(ds, d)
		shards = append(shards, d.Addr)
	}
	// The version appears once all three are registered, so that none
	// decides with fewer peers on a slow machine.
	watch := srv.Watcher()
	defer watch.Close()
	waitFor(t, "three registered nodes", func() bool { return len(watch.Map().Nodes) == 3 })
	testutil.WriteVersion(t, root, "db", "v1", 6, testutil.Sharded, seqfile.WriterOptions{}, recs)
	for _, d := range ds {
		d.Refresh()
	}
	for _, d := range ds {
		waitFor(t, d.Addr+" active", func() bool { return d.Versions.CurrentVersion("db") == "v1" })
	}
	for _, d := range ds {
		st := statusOf(t, d.Addr)
		want := placement.Assign(d.Addr, shards, 6, 2)
		if got := st.DBs["db"].Versions["v1"].Partitions; st.Mode != "cluster" || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: mode %q holds %v, want %v", d.Addr, st.Mode, got, want)
		}
		if st.Cluster == nil || len(st.Cluster.Nodes) != 3 || !st.Cluster.Version("db", "v1").Complete(2) {
			t.Fatalf("%s: cluster map %+v", d.Addr, st.Cluster)
		}
		held := map[int]bool{}
		for _, p := range want {
			held[p] = true
		}
		for i := 0; i < len(recs); i += 13 {
			key := recs[i]
			code, body, _ := httpGet(t, "http://"+d.Addr+"/db/"+string(key.Key))
			p := partitioner.Partition(key.Key, 6)
			switch {
			case held[p] && (code != 200 || body != string(key.Value)):
				t.Fatalf("%s: held key %s -> %d %q", d.Addr, key.Key, code, body)
			case !held[p] && code != http.StatusMisdirectedRequest:
				t.Fatalf("%s: key %s of partition %d it does not hold -> %d, want 421", d.Addr, key.Key, p, code)
			}
		}
	}
}
