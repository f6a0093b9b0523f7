package server

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"spangle/shared/topo"
	"spangle/xds/snapshot"
)

var nodes = []string{"127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003"}

// harness runs a Server on a loopback port and dials it.
type harness struct {
	srv    *Server
	conn   *grpc.ClientConn
	cancel context.CancelFunc
	done   chan error
}

func startServer(t *testing.T, w topo.Watcher, opts Options) *harness {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	opts.Watcher = w
	opts.Listener = lis
	if opts.RouterdAddr == "" {
		opts.RouterdAddr = "127.0.0.1:8080"
	}
	if opts.Logger == nil {
		opts.Logger = zaptest.NewLogger(t, zaptest.Level(zap.InfoLevel))
	}
	srv, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &harness{srv: srv, cancel: cancel, done: make(chan error, 1)}
	go func() { h.done <- srv.Run(ctx) }()
	h.conn, err = grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		h.conn.Close()
		h.stop(t)
	})
	return h
}

// stop cancels Run and checks that it returns promptly and cleanly.
func (h *harness) stop(t *testing.T) {
	t.Helper()
	h.cancel()
	select {
	case err, ok := <-h.done:
		if ok && err != nil {
			t.Errorf("Run: %v", err)
		}
		if ok {
			close(h.done)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}

func waitCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// pushLatency publishes m and returns how long until c holds what
// check wants.
func pushLatency(t *testing.T, mirror *topo.Mirror, m *topo.Map, c *client, check func(*xdsState) error) time.Duration {
	t.Helper()
	start := time.Now()
	mirror.Publish(m)
	if _, err := c.waitFor(waitCtx(t, 5*time.Second), check); err != nil {
		t.Fatal(err)
	}
	return time.Since(start)
}

func testProtocol(t *testing.T, start func(context.Context, *testing.T, *grpc.ClientConn, string) *client) {
	mirror := topo.NewMirror()
	a1, b1 := testVersion{"a", "v1", 4}, testVersion{"b", "v1", 3}
	m1 := clusterMap(nodes, nil, a1, b1)
	mirror.Publish(m1)
	h := startServer(t, mirror, Options{})
	streamCtx, stopStream := context.WithCancel(context.Background())
	defer stopStream()
	c := start(streamCtx, t, h.conn, "envoy-1")

	served := map[string]string{"a": "v1", "b": "v1"}
	if _, err := c.waitFor(waitCtx(t, 5*time.Second), matches(m1, served)); err != nil {
		t.Fatal(err)
	}

	// A storaged dies: it leaves every load assignment within 1 s.
	dead := map[string]bool{nodes[1]: true}
	m2 := clusterMap(nodes, dead, a1, b1)
	check := func(st *xdsState) error {
		if holds(st, nodes[1]) {
			return errors.New("dead node still listed")
		}
		return matches(m2, served)(st)
	}
	d := pushLatency(t, mirror, m2, c, check)
	t.Logf("node death reached the client in %v", d)
	if d > time.Second {
		t.Errorf("update took %v, want < 1s", d)
	}

	// A new complete version of a, with another partition count: the
	// clusters of v1 go, those of v2 come, and the script changes N.
	a2 := testVersion{"a", "v2", 5}
	m3 := clusterMap(nodes, dead, a1, a2, b1)
	served = map[string]string{"a": "v2", "b": "v1"}
	d = pushLatency(t, mirror, m3, c, matches(m3, served))
	t.Logf("version switch reached the client in %v", d)
	if d > time.Second {
		t.Errorf("update took %v, want < 1s", d)
	}

	// v2 loses every replica of a partition: Envoy stays on v2 (never
	// back to v1), and that partition's keys go to routerd.
	m4 := clusterMap(nodes, dead, a1, a2, b1)
	m4.DBs["a"]["v2"].Replicas[0] = nil
	pushLatency(t, mirror, m4, c, matches(m4, served))

	// Any Envoy node id gets the same configuration.
	c2 := start(streamCtx, t, h.conn, "envoy-2")
	if _, err := c2.waitFor(waitCtx(t, 5*time.Second), matches(m4, served)); err != nil {
		t.Fatal(err)
	}
	if err := c.versionsIncrease(); err != nil {
		t.Error(err)
	}

	// Cancelling Run closes the streams.
	h.stop(t)
	if _, err := c.waitFor(waitCtx(t, 5*time.Second), func(*xdsState) error { return errors.New("waiting for the end") }); err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("stream did not end with the server: %v", err)
	}
}

func TestStateOfTheWorld(t *testing.T) { testProtocol(t, startSotW) }

func TestDelta(t *testing.T) { testProtocol(t, startDelta) }

// TestVersionsIncrease checks that every push has a greater version and
// that an unchanged map pushes nothing.
func TestVersionsIncrease(t *testing.T) {
	mirror := topo.NewMirror()
	h := startServer(t, mirror, Options{})
	ctx := waitCtx(t, 10*time.Second)
	st, err := h.srv.WaitPush(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	prev := st.Version
	for i := 0; i < 5; i++ {
		dead := map[string]bool{nodes[i%3]: true}
		mirror.Publish(clusterMap(nodes, dead, testVersion{"a", "v1", 3}))
		st, err := h.srv.WaitPush(ctx, prev)
		if err != nil {
			t.Fatal(err)
		}
		if st.Version <= prev {
			t.Fatalf("version %d after %d", st.Version, prev)
		}
		prev = st.Version
	}
	// The same map again: no push.
	mirror.Publish(clusterMap(nodes, map[string]bool{nodes[1]: true}, testVersion{"a", "v1", 3}))
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if st, err := h.srv.WaitPush(short, prev); err == nil {
		t.Errorf("unchanged map pushed version %d", st.Version)
	}
}

// TestRefusesInvalidSnapshot: resources breaking Envoy's validation rules
// are logged and never pushed; Envoy keeps the last good configuration.
func TestRefusesInvalidSnapshot(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	mirror := topo.NewMirror()
	h := startServer(t, mirror, Options{
		Logger: zap.New(core),
		Tuning: snapshot.Options{MaxEjectionPercent: 200}, // at most 100 is valid
	})
	ctx := waitCtx(t, 10*time.Second)
	st, err := h.srv.WaitPush(ctx, 0) // the empty map has no partition cluster: valid
	if err != nil {
		t.Fatal(err)
	}
	mirror.Publish(clusterMap(nodes, nil, testVersion{"a", "v1", 3}))
	for logs.FilterMessage("xds: refusing invalid snapshot").Len() == 0 {
		select {
		case <-ctx.Done():
			t.Fatal("invalid snapshot not reported")
		case <-time.After(10 * time.Millisecond):
		}
	}
	if got := h.srv.Status(); got.Version != st.Version {
		t.Errorf("status moved from version %d to %d", st.Version, got.Version)
	}
}

func TestNewestComplete(t *testing.T) {
	c := NewNewestComplete(1)
	a1, a2, b1 := testVersion{"a", "v1", 3}, testVersion{"a", "v2", 3}, testVersion{"b", "v1", 2}
	m := clusterMap(nodes, nil, a1, b1)
	check := func(m *topo.Map, want map[string]string) {
		t.Helper()
		got := c.Served(m)
		if len(got) != len(want) {
			t.Fatalf("Served = %v, want %v", got, want)
		}
		for k, v := range want {
			if got[k] != v {
				t.Fatalf("Served = %v, want %v", got, want)
			}
		}
	}
	check(m, map[string]string{"a": "v1", "b": "v1"})
	// v2 incomplete: not yet.
	m = clusterMap(nodes, nil, a1, a2, b1)
	m.DBs["a"]["v2"].Replicas[1] = nil
	check(m, map[string]string{"a": "v1", "b": "v1"})
	// v2 complete: switch.
	check(clusterMap(nodes, nil, a1, a2, b1), map[string]string{"a": "v2", "b": "v1"})
	// v2 incomplete again: stay; b gone: not routed.
	m = clusterMap(nodes, nil, a1, a2)
	m.DBs["a"]["v2"].Replicas[1] = nil
	check(m, map[string]string{"a": "v2"})
	// v2 gone altogether: still no going back to v1.
	check(clusterMap(nodes, nil, a1), map[string]string{"a": "v2"})
}

// TestResolvesHostNames: Envoy takes only IPs from EDS, so registered
// host names are looked up.
func TestResolvesHostNames(t *testing.T) {
	names := []string{"storaged-1:7001", "storaged-2:7001"}
	mirror := topo.NewMirror()
	mirror.Publish(clusterMap(names, nil, testVersion{"a", "v1", 2}))
	var moved atomic.Bool // storaged-1 moves to another IP
	lookup := func(_ context.Context, host string) ([]string, error) {
		switch host {
		case "storaged-1":
			if moved.Load() {
				return []string{"10.0.0.9"}, nil
			}
			return []string{"10.0.0.1"}, nil
		case "storaged-2":
			return []string{"10.0.0.2"}, nil
		}
		return nil, errors.New("no such host")
	}
	h := startServer(t, mirror, Options{LookupHost: lookup, ResolveInterval: 50 * time.Millisecond})
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	c := startSotW(ctx, t, h.conn, "envoy")
	_, err := c.waitFor(waitCtx(t, 5*time.Second), func(st *xdsState) error {
		if len(st.endpoints) != 2 || !holds(st, "10.0.0.1:7001") || !holds(st, "10.0.0.2:7001") {
			return errors.New("resolved addresses not served yet")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Names are looked up again, and a moved node follows.
	moved.Store(true)
	_, err = c.waitFor(waitCtx(t, 5*time.Second), func(st *xdsState) error {
		if holds(st, "10.0.0.1:7001") || !holds(st, "10.0.0.9:7001") {
			return errors.New("moved address not served yet")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestNewChecksOptions(t *testing.T) {
	m := topo.NewMirror()
	for _, o := range []Options{
		{Bind: "127.0.0.1:0", RouterdAddr: "127.0.0.1:1"},
		{Watcher: m, RouterdAddr: "127.0.0.1:1"},
		{Watcher: m, Bind: "127.0.0.1:0"},
		{Watcher: m, Bind: "127.0.0.1:0", RouterdAddr: "nope"},
	} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) accepted", o)
		}
	}
}
