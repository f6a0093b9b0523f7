package nodetest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"spangle/shared/wait"
	"spangle/shared/wire"
)

// ErrUnhealthy is returned by Health when /healthz answers, but not 200;
// the Health is still filled in.
var ErrUnhealthy = errors.New("nodetest: not healthy")

// maxBody bounds what the handle reads of an answer: above any status
// page of a test (a cluster of 500 dbs answers some hundreds of KB).
const maxBody = 64 << 20

// Node is a handle on one daemon's HTTP port. It is safe for concurrent
// use.
type Node struct {
	// Base is the daemon's URL, e.g. http://127.0.0.1:1234.
	Base   string
	client *http.Client
}

// New returns a handle on the daemon at base (a URL, or a host:port).
func New(base string) *Node {
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	return NewClient(base, &http.Client{Timeout: 5 * time.Second})
}

// NewClient returns a handle on the daemon at base that asks with client
// (one speaking TLS to an https base, say).
func NewClient(base string, client *http.Client) *Node {
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	return &Node{Base: base, client: client}
}

// do GETs path (asking for JSON if json) and returns the status, body
// and headers.
func (n *Node) do(ctx context.Context, path string, json bool) (int, []byte, http.Header, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, n.Base+path, nil)
	if err != nil {
		return 0, nil, nil, fmt.Errorf("nodetest: %w", err)
	}
	if json {
		req.Header.Set("Accept", "application/json")
	}
	resp, err := n.client.Do(req)
	if err != nil {
		return 0, nil, nil, fmt.Errorf("nodetest: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return 0, nil, nil, fmt.Errorf("nodetest: %s%s: %w", n.Base, path, err)
	}
	return resp.StatusCode, b, resp.Header, nil
}

// Status is the node's status page.
func (n *Node) Status(ctx context.Context) (wire.NodeStatus, error) {
	var st wire.NodeStatus
	code, b, _, err := n.do(ctx, "/", true)
	if err != nil {
		return st, err
	}
	if code != http.StatusOK {
		return st, fmt.Errorf("nodetest: status: %d", code)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("nodetest: status: %w", err)
	}
	return st, nil
}

// Health is a node's /healthz: db -> version -> state (and reason).
type Health map[string]map[string]wire.Health

// Health reads the node's /healthz; an answer other than 200 is an
// error wrapping ErrUnhealthy, with the Health filled in if it parsed.
func (n *Node) Health(ctx context.Context) (Health, error) {
	code, b, _, err := n.do(ctx, wire.PathHealth, false)
	if err != nil {
		return nil, err
	}
	var h Health
	if err := json.Unmarshal(b, &h); err != nil {
		h = nil
	}
	if code != http.StatusOK {
		return h, fmt.Errorf("%w: %s healthz status %d: %.200s", ErrUnhealthy, n.Base, code, b)
	}
	if h == nil {
		return nil, fmt.Errorf("nodetest: %s healthz: not JSON: %.200s", n.Base, b)
	}
	return h, nil
}

// State is db/version's /healthz state on the node, "" if unknown (or
// /healthz cannot be read).
func (n *Node) State(ctx context.Context, db, version string) string {
	h, _ := n.Health(ctx)
	return h[db][version].State
}

// Answer is the answer to a key lookup.
type Answer struct {
	Code    int
	Body    string
	Version string // the X-Sequins-Version header
}

// Get looks key of db up (key is sent as given, unescaped).
func (n *Node) Get(ctx context.Context, db, key string) (Answer, error) {
	code, b, hdr, err := n.do(ctx, "/"+db+"/"+key, false)
	if err != nil {
		return Answer{}, err
	}
	return Answer{Code: code, Body: string(b), Version: hdr.Get(wire.HeaderVersion)}, nil
}

// Metric is the value of one series of the node's /metrics, named with
// its labels as the exposition format writes them
// (`name{label="value"}`); ok is false when it is not there.
func (n *Node) Metric(ctx context.Context, series string) (v float64, ok bool, err error) {
	code, b, _, err := n.do(ctx, wire.PathMetrics, false)
	if err != nil {
		return 0, false, err
	}
	if code != http.StatusOK {
		return 0, false, fmt.Errorf("nodetest: metrics: %d", code)
	}
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		if s, found := strings.CutPrefix(sc.Text(), series+" "); found {
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return 0, false, fmt.Errorf("nodetest: metric %s: %w", series, err)
			}
			return f, true, nil
		}
	}
	return 0, false, nil
}

// WaitActive polls /healthz every interval until db/version is ACTIVE on
// the node, for at most timeout.
func (n *Node) WaitActive(ctx context.Context, timeout, interval time.Duration, db, version string) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := wait.Poll(ctx, interval, func(ctx context.Context) (bool, error) {
		h, err := n.Health(ctx)
		if h[db][version].State == wire.StateActive {
			return true, nil
		}
		return false, err
	})
	if err != nil {
		return fmt.Errorf("nodetest: %s: %s/%s not ACTIVE after %v: %w", n.Base, db, version, timeout, err)
	}
	return nil
}

// WaitFor polls cond until it holds, failing the test after d.
func WaitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := wait.Poll(ctx, 25*time.Millisecond, func(context.Context) (bool, error) { return cond(), nil }); err != nil {
		t.Fatalf("timed out after %v waiting for %s", d, what)
	}
}

// WaitActive waits until db/version is ACTIVE on every node, failing the
// test after d.
func WaitActive(t testing.TB, d time.Duration, db, version string, nodes ...*Node) {
	t.Helper()
	WaitFor(t, d, db+"/"+version+" ACTIVE on every node", func() bool {
		for _, n := range nodes {
			if n.State(context.Background(), db, version) != wire.StateActive {
				return false
			}
		}
		return true
	})
}
