package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"spangle/shared/wire"
)

// storagedBin is the storaged binary TestMain builds.
var storagedBin string

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "storaged-integration-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	storagedBin = filepath.Join(dir, "storaged")
	cmd := exec.Command("go", "build", "-o", storagedBin, "spangle/storaged")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "integration: building storaged:", err)
		return 1
	}
	return m.Run()
}

// Cluster settings of the tests: short, so that convergence and session
// expiry take seconds, not the production defaults.
const (
	testCluster        = "it"
	testConverge       = "1s"
	testSessionTimeout = 3 * time.Second
	testRetention      = "2s"
)

// freeAddr returns a loopback address nobody listens on right now.
func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// node is one real storaged process in cluster mode.
type node struct {
	t       testing.TB
	addr    string
	args    []string
	logPath string
	cmd     *exec.Cmd
	exited  chan struct{}
}

// startNode runs storaged in cluster mode against ZooKeeper at zkAddr on
// source, listening (and advertised) on a free loopback port. It does not
// wait for anything.
func startNode(t testing.TB, zkAddr, source string, extra ...string) *node {
	t.Helper()
	dir := t.TempDir()
	n := &node{t: t, addr: freeAddr(t), logPath: filepath.Join(dir, "storaged.log")}
	n.args = append([]string{
		"--source", source, "--local-store", filepath.Join(dir, "store"), "--bind", n.addr,
		"--zk", zkAddr, "--cluster", testCluster, "--advertise", n.addr,
		"--time-to-converge", testConverge, "--zk-session-timeout", testSessionTimeout.String(),
		"--version-retention", testRetention,
	}, extra...)
	n.start()
	t.Cleanup(func() {
		n.stop()
		if t.Failed() {
			b, _ := os.ReadFile(n.logPath)
			t.Logf("storaged %s log:\n%s", n.addr, tail(string(b), 60))
		}
	})
	return n
}

func tail(s string, lines int) string {
	l := strings.Split(s, "\n")
	if len(l) > lines {
		l = l[len(l)-lines:]
	}
	return strings.Join(l, "\n")
}

func (n *node) start() {
	n.t.Helper()
	f, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		n.t.Fatal(err)
	}
	defer f.Close()
	n.cmd = exec.Command(storagedBin, n.args...)
	n.cmd.Stdout, n.cmd.Stderr = f, f
	if err := n.cmd.Start(); err != nil {
		n.t.Fatalf("starting storaged: %v", err)
	}
	n.exited = make(chan struct{})
	cmd, exited := n.cmd, n.exited
	go func() { cmd.Wait(); close(exited) }()
}

// pid is the process id, to show a node was not restarted.
func (n *node) pid() int { return n.cmd.Process.Pid }

// running reports whether the process is still alive.
func (n *node) running() bool {
	select {
	case <-n.exited:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL: no goodbye, the ZooKeeper session just stops.
func (n *node) kill() {
	if n.cmd != nil {
		n.cmd.Process.Kill()
		<-n.exited
		n.cmd = nil
	}
}

func (n *node) stop() {
	if n.cmd == nil {
		return
	}
	n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.exited:
	case <-time.After(15 * time.Second):
		n.cmd.Process.Kill()
		<-n.exited
	}
	n.cmd = nil
}

// refresh makes the node re-scan its source (SIGHUP).
func (n *node) refresh() {
	if n.cmd != nil {
		n.cmd.Process.Signal(syscall.SIGHUP)
	}
}

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
