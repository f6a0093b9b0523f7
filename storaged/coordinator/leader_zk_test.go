package coordinator_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"

	"spangle/shared/source"
	"spangle/shared/topo"
	"spangle/shared/topo/topotest"
	"spangle/shared/topo/zktopo"
	"spangle/shared/zktest"
	"spangle/storaged/coordinator"
)

// zkNode opens a session of the test's cluster on srv.
func zkNode(t *testing.T, srv *zktest.Server) *zktopo.Conn {
	return zkSession(t, srv, nonName.ReplaceAllString(t.Name(), "-"))
}

// zkSession opens a session of cluster on srv, connected, closed when the
// test ends.
func zkSession(t *testing.T, srv *zktest.Server, cluster string) *zktopo.Conn {
	t.Helper()
	c, err := zktopo.Open(zktopo.Options{
		Servers: []string{srv.Addr()}, Cluster: cluster,
		SessionTimeout: 4 * time.Second, Logger: zaptest.NewLogger(t).Named("zk"),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := c.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	return c
}

// pinSource is a source root holding db/v1 and db/v2, and a _PIN
// marker naming pinned.
func pinSource(t *testing.T, pinned string) source.Source {
	t.Helper()
	root := t.TempDir()
	for _, v := range []string{"v1", "v2"} {
		if err := os.MkdirAll(filepath.Join(root, "db", v), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "db", source.PinFile), []byte(pinned+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	src, err := source.Open(root, source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// withDB publishes db/v1, so that the leader looks at db's marker.
func withDB(t *testing.T, conn *zktopo.Conn) {
	t.Helper()
	if _, err := conn.PublishVersion(context.Background(), "db", "v1", topo.VersionInfo{NumPartitions: 1}); err != nil {
		t.Fatal(err)
	}
	topotest.WaitMap(t, conn, "db/v1", func(m *topo.Map) bool { return m.Version("db", "v1") != nil })
}

// runLeader runs a coordinator for conn, the only candidate, until the
// test ends.
func runLeader(t *testing.T, conn *zktopo.Conn, opts coordinator.Options) *coordinator.Coordinator {
	t.Helper()
	opts.Conn, opts.Coord = conn, conn
	if opts.Self.Addr == "" {
		opts.Self = topo.Node{Addr: "127.0.0.1:9400", ShardID: "127.0.0.1:9400"}
	}
	opts.Interval = 50 * time.Millisecond
	opts.Log = zaptest.NewLogger(t).Named("coordinator")
	c, err := coordinator.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return c
}

// waitStatus waits until ok holds for c's status.
func waitStatus(t *testing.T, c *coordinator.Coordinator, what string, ok func(coordinator.Status) bool) coordinator.Status {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		st := c.Status()
		if ok(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s; status %+v", what, st)
		}
		time.Sleep(20 * time.Millisecond) // the status has no event to wait on
	}
}

// A garbage decision record does not stop the leader: it publishes the
// pins (before, every round failed reading it and no pin was ever
// published), and the record is counted as rejected.
func TestGarbageDecisionStillPublishesPins(t *testing.T) {
	srv := zktest.Start(t)
	conn := zkNode(t, srv)
	paths := topo.Paths{Cluster: nonName.ReplaceAllString(t.Name(), "-")}
	srv.Raw(t).Put(paths.Decision(), []byte("}{ not a decision"))
	withDB(t, conn)
	runLeader(t, conn, coordinator.Options{Source: pinSource(t, "v1")})
	topotest.WaitMap(t, conn, "the pin published", func(m *topo.Map) bool {
		return m.PinOf("db") == topo.Pin{Version: "v1", Generation: 1}
	})
}

// A pin generation at the maximum is not stepped past (it wrapped to 0,
// and every later _PIN was fenced off silently): the leader refuses,
// keeps the pin in force and says why on its status; a generation beyond
// the bound (the uint64 maximum, hand-written) is an invalid entry,
// which the leader writes over with generation 1.
func TestPinGenerationAtMaximum(t *testing.T) {
	t.Run("AtBound", func(t *testing.T) {
		srv := zktest.Start(t)
		conn := zkNode(t, srv)
		paths := topo.Paths{Cluster: nonName.ReplaceAllString(t.Name(), "-")}
		at := topo.Pin{Version: "v1", Generation: topo.MaxPinGeneration}
		srv.Raw(t).Put(paths.Pin("db"), []byte(fmt.Sprintf(`{"version":"v1","generation":%d}`, at.Generation)))
		topotest.WaitMap(t, conn, "the pin at the bound", func(m *topo.Map) bool { return m.PinOf("db") == at })
		c := runLeader(t, conn, coordinator.Options{Source: pinSource(t, "v2")})
		st := waitStatus(t, c, "the pin refused", func(st coordinator.Status) bool { return st.Pins["db"].Error != "" })
		if !strings.Contains(st.Pins["db"].Error, "maximum") || st.Pins["db"].Published != at {
			t.Fatalf("pin status %+v, want the pin at the bound kept and a refusal naming the maximum", st.Pins["db"])
		}
		if got := conn.Map().PinOf("db"); got != at {
			t.Fatalf("pin in force %+v, want %+v", got, at)
		}
	})
	t.Run("BeyondBound", func(t *testing.T) {
		srv := zktest.Start(t)
		conn := zkNode(t, srv)
		paths := topo.Paths{Cluster: nonName.ReplaceAllString(t.Name(), "-")}
		srv.Raw(t).Put(paths.Pin("db"), []byte(`{"version":"v1","generation":18446744073709551615}`))
		withDB(t, conn)
		runLeader(t, conn, coordinator.Options{Source: pinSource(t, "v2")})
		topotest.WaitMap(t, conn, "the pin published over the invalid one", func(m *topo.Map) bool {
			return m.PinOf("db") == topo.Pin{Version: "v2", Generation: 1}
		})
	})
}

// A leader whose rounds cannot decide says so: on its status (why and
// since when), in spangle_storaged_leader_rounds_failed_total and
// spangle_storaged_leader_failing. Here the decision record claims a
// ring version the ring has not reached, so no decision can land while
// a version needs another copy.
func TestLeaderThatCannotDecideSaysSo(t *testing.T) {
	srv := zktest.Start(t)
	a, b := zkNode(t, srv), zkNode(t, srv)
	paths := topo.Paths{Cluster: nonName.ReplaceAllString(t.Name(), "-")}
	ctx := context.Background()
	const addrA, addrB = "127.0.0.1:9401", "127.0.0.1:9402"
	for _, n := range []struct {
		c    *zktopo.Conn
		addr string
	}{{a, addrA}, {b, addrB}} {
		if err := n.c.RegisterNode(ctx, topo.Node{ID: n.addr, Addr: n.addr}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.PublishVersion(ctx, "db", "v1", topo.VersionInfo{NumPartitions: 1}); err != nil {
		t.Fatal(err)
	}
	if err := a.PublishPartition(ctx, "db", "v1", 0, addrA); err != nil {
		t.Fatal(err)
	}
	srv.Raw(t).Put(paths.Decision(), []byte(`{"ring_version":1000000}`))
	topotest.WaitMap(t, a, "both nodes and db/v1", func(m *topo.Map) bool {
		return len(m.Nodes) == 2 && m.Version("db", "v1").Complete(1)
	})
	reg := prometheus.NewRegistry()
	c := runLeader(t, a, coordinator.Options{
		Self: topo.Node{Addr: addrA, ShardID: addrA}, RereplicateAfter: time.Millisecond, Registerer: reg,
	})
	st := waitStatus(t, c, "the round error", func(st coordinator.Status) bool { return st.RoundError != "" })
	if !strings.Contains(st.RoundError, "ring version") || st.RoundErrorSince.IsZero() {
		t.Fatalf("round error %q since %v", st.RoundError, st.RoundErrorSince)
	}
	if w := c.WireStatus(); w.RoundError != st.RoundError {
		t.Fatalf("the status page's round error %q, want %q", w.RoundError, st.RoundError)
	}
	if got := metricValue(t, reg, "spangle_storaged_leader_rounds_failed_total"); got < 1 {
		t.Fatalf("spangle_storaged_leader_rounds_failed_total = %v, want at least 1", got)
	}
	if got := metricValue(t, reg, "spangle_storaged_leader_failing"); got != 1 {
		t.Fatalf("spangle_storaged_leader_failing = %v, want 1", got)
	}
}

// metricValue is the value of reg's unlabelled counter or gauge name.
func metricValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			m := f.GetMetric()[0]
			if m.Counter != nil {
				return m.GetCounter().GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}
