package integration

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"spangle/shared/proctest"
	"spangle/shared/wire"
)

// storagedBin is the storaged binary TestMain builds.
var storagedBin string

func TestMain(m *testing.M) {
	os.Exit(proctest.RunWithBinary(m, "spangle/storaged", &storagedBin))
}

// Cluster settings of the tests: short, so that convergence and session
// expiry take seconds, not the production defaults.
const (
	testCluster        = "it"
	testConverge       = "1s"
	testSessionTimeout = 3 * time.Second
	testRetention      = "2s"
)

// node is one real storaged process in cluster mode.
type node struct {
	*proctest.Process
	addr  string
	store string // its local store
}

// startNode runs storaged in cluster mode against ZooKeeper at zkAddr on
// source, listening (and advertised) on a free loopback port. It does not
// wait for anything.
func startNode(t testing.TB, zkAddr, source string, extra ...string) *node {
	t.Helper()
	addr := proctest.FreeAddr(t)
	store := t.TempDir()
	args := append([]string{
		"--source", source, "--local-store", store, "--bind", addr,
		"--zk", zkAddr, "--cluster", testCluster, "--advertise", addr,
		"--time-to-converge", testConverge, "--zk-session-timeout", testSessionTimeout.String(),
		"--version-retention", testRetention,
	}, extra...)
	return &node{Process: proctest.Start(t, storagedBin, args...), addr: addr, store: store}
}

// refresh makes the node re-scan its source (SIGHUP).
func (n *node) refresh() { n.Signal(syscall.SIGHUP) }

var client = &http.Client{Timeout: 5 * time.Second}

// status fetches the node's status JSON.
func (n *node) status() (wire.NodeStatus, error) {
	var st wire.NodeStatus
	req, _ := http.NewRequest("GET", "http://"+n.addr+"/", nil)
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return st, fmt.Errorf("status: %s", resp.Status)
	}
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// state is db/version's /healthz state on the node, "" if unknown.
func (n *node) state(db, version string) string {
	resp, err := client.Get("http://" + n.addr + wire.PathHealth)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	var h map[string]map[string]wire.Health
	if json.NewDecoder(resp.Body).Decode(&h) != nil {
		return ""
	}
	return h[db][version].State
}

// get looks a key up; it returns the status, the body and the version.
func (n *node) get(db, key string) (int, string, string, error) {
	resp, err := client.Get("http://" + n.addr + "/" + db + "/" + key)
	if err != nil {
		return 0, "", "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header.Get(wire.HeaderVersion), err
}

// waitFor polls cond until it holds or d passes.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// waitActive waits until db/version is ACTIVE on every node.
func waitActive(t testing.TB, d time.Duration, db, version string, nodes ...*node) {
	t.Helper()
	waitFor(t, d, db+"/"+version+" ACTIVE on every node", func() bool {
		for _, n := range nodes {
			if n.state(db, version) != wire.StateActive {
				return false
			}
		}
		return true
	})
}

// addrs returns the nodes' addresses, sorted: their shard ids.
func addrs(nodes ...*node) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.addr)
	}
	sort.Strings(out)
	return out
}

// healthz is the node's /healthz, nil when it cannot be read.
func (n *node) healthz() map[string]map[string]wire.Health {
	resp, err := client.Get("http://" + n.addr + wire.PathHealth)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var h map[string]map[string]wire.Health
	if json.NewDecoder(resp.Body).Decode(&h) != nil {
		return nil
	}
	return h
}

// health is the node's /healthz entry of the test db's version.
func (n *node) health(version string) wire.Health {
	return n.healthz()[testDB][version]
}

// metric is the value of one series of the node's /metrics, named with
// its labels as the exposition format writes them
// (`name{label="value"}`); -1 when it is not there.
func (n *node) metric(series string) float64 {
	resp, err := client.Get("http://" + n.addr + wire.PathMetrics)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return -1
			}
			return f
		}
	}
	return -1
}
