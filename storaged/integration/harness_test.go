package integration

import (
	"context"
	"errors"
	"net/http"
	"os"
	"sort"
	"syscall"
	"testing"
	"time"

	"spangle/shared/nodetest"
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

// handle is the handle on the node's HTTP port.
func (n *node) handle() *nodetest.Node { return nodetest.New(n.addr) }

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

// client is for the requests the node handle does not make (a batch).
var client = &http.Client{Timeout: 5 * time.Second}

// status fetches the node's status JSON.
func (n *node) status() (wire.NodeStatus, error) { return n.handle().Status(context.Background()) }

// state is db/version's /healthz state on the node, "" if unknown.
func (n *node) state(db, version string) string {
	return n.handle().State(context.Background(), db, version)
}

// get looks a key up; it returns the status, the body and the version.
func (n *node) get(db, key string) (int, string, string, error) {
	a, err := n.handle().Get(context.Background(), db, key)
	return a.Code, a.Body, a.Version, err
}

// waitFor polls cond until it holds or d passes.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	nodetest.WaitFor(t, d, what, cond)
}

// waitActive waits until db/version is ACTIVE on every node.
func waitActive(t testing.TB, d time.Duration, db, version string, nodes ...*node) {
	t.Helper()
	handles := make([]*nodetest.Node, len(nodes))
	for i, n := range nodes {
		handles[i] = n.handle()
	}
	nodetest.WaitActive(t, d, db, version, handles...)
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
func (n *node) healthz() nodetest.Health {
	h, err := n.handle().Health(context.Background())
	if err != nil && !errors.Is(err, nodetest.ErrUnhealthy) {
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
	v, ok, err := n.handle().Metric(context.Background(), series)
	if !ok || err != nil {
		return -1
	}
	return v
}
