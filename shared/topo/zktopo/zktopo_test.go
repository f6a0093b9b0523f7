package zktopo_test

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"spangle/shared/proxytest"
	"spangle/shared/topo"
	"spangle/shared/topo/topotest"
	"spangle/shared/topo/zktopo"
	"spangle/shared/zktest"
)

// sessionTimeout is short so that a cut client's session expires soon,
// yet long enough for a loaded 2-core machine running the race detector
// to keep healthy sessions alive (the client times out a read after two
// thirds of it; 2 s was seen to flap under load).
const sessionTimeout = 5 * time.Second

var nonName = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// cluster gives each test its own cluster, so tests sharing a server do
// not see each other's entries.
func cluster(t testing.TB) string { return nonName.ReplaceAllString(t.Name(), "-") }

func open(t testing.TB, servers ...string) *zktopo.Conn {
	c, err := zktopo.Open(zktopo.Options{
		Servers: servers, Cluster: cluster(t), SessionTimeout: sessionTimeout, Logger: zaptest.NewLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), topotest.Timeout)
	defer cancel()
	if err := c.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	return c
}

// proxiedConns is the part of a topotest.Backend that makes Conns to srv,
// each through its own proxy so that it alone can be cut off until its
// session expires.
func proxiedConns(srv *zktest.Server) topotest.Backend {
	return proxiedConnsWith(srv, zktopo.Options{})
}

// proxiedConnsWith is proxiedConns with auth's Auth and ReadACL.
func proxiedConnsWith(srv *zktest.Server, auth zktopo.Options) topotest.Backend {
	var mu sync.Mutex
	proxies := map[topo.Conn]*proxytest.Proxy{}
	proxy := func(c topo.Conn) *proxytest.Proxy {
		mu.Lock()
		defer mu.Unlock()
		return proxies[c]
	}
	return topotest.Backend{
		NewConn: func(t *testing.T) topo.Conn {
			p := srv.Proxy(t)
			c := openWith(t, p.Addr(), zktopo.Options{Auth: auth.Auth, ReadACL: auth.ReadACL}, true)
			mu.Lock()
			proxies[c] = p
			mu.Unlock()
			return c
		},
		Cut:  func(_ *testing.T, c topo.Conn) { proxy(c).Cut() },
		Heal: func(_ *testing.T, c topo.Conn) { proxy(c).Heal() },
	}
}

func TestSuite(t *testing.T) { suite(t, zktopo.Options{}) }

// TestSuiteWithAuth runs the suite with every Conn and Watcher holding
// the cluster's credential and acl_read auth, so that every znode is
// closed to other clients: what the backend does works under its ACLs.
func TestSuiteWithAuth(t *testing.T) {
	suite(t, zktopo.Options{Auth: credential(t, clusterCred), ReadACL: zktopo.ReadAuth})
}

func suite(t *testing.T, auth zktopo.Options) {
	srv := zktest.Start(t)
	b := proxiedConnsWith(srv, auth)
	b.NewWatcher = func(t *testing.T) topo.Watcher {
		w, err := zktopo.OpenWatcher(zktopo.Options{
			Servers: []string{srv.Addr()}, Cluster: cluster(t), SessionTimeout: sessionTimeout, Logger: zaptest.NewLogger(t),
			Auth: auth.Auth, ReadACL: auth.ReadACL,
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Close() })
		return w
	}
	b.Down = func(*testing.T) { srv.Stop() }
	b.Up = func(*testing.T) {
		// An outage longer than the session timeout.
		time.Sleep(2 * sessionTimeout)
		srv.Restart()
	}
	topotest.Run(t, b)
}

// TestFootprint counts, on a server of its own, the watches and znodes
// one storaged costs with 10 dbs of 64 partitions: the figures of the
// ZooKeeper layout in docs/design.md.
func TestFootprint(t *testing.T) {
	srv := zktest.Start(t)
	c := open(t, srv.Addr())
	ctx := context.Background()
	const dbs, parts = 10, 64
	if err := c.RegisterNode(ctx, topo.Node{ID: "n", Addr: "127.0.0.1:9000"}); err != nil {
		t.Fatal(err)
	}
	publish := func(version string) {
		start := time.Now()
		defer func() { t.Logf("published %s of %d dbs x %d partitions in %v", version, dbs, parts, time.Since(start)) }()
		for d := 0; d < dbs; d++ {
			db := "db" + strconv.Itoa(d)
			if _, err := c.PublishVersion(ctx, db, version, topo.VersionInfo{NumPartitions: parts}); err != nil {
				t.Fatal(err)
			}
			for p := 0; p < parts; p++ {
				if err := c.PublishPartition(ctx, db, version, p, "127.0.0.1:9000"); err != nil {
					t.Fatal(err)
				}
			}
		}
		topotest.WaitMap(t, c, "every version complete", func(m *topo.Map) bool {
			for d := 0; d < dbs; d++ {
				if !m.Version("db"+strconv.Itoa(d), version).Complete(1) {
					return false
				}
			}
			return true
		})
	}
	for i, version := range []string{"v1", "v2"} {
		publish(version)
		versions := i + 1
		wantWatches := 3 + dbs + dbs*versions
		// Watches are set after the events; give the watch loop a moment.
		deadline := time.Now().Add(10 * time.Second)
		for mntr(t, srv, "zk_watch_count") != wantWatches && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		watches := mntr(t, srv, "zk_watch_count")
		eph := mntr(t, srv, "zk_ephemerals_count")
		znodes := mntr(t, srv, "zk_znode_count")
		t.Logf("%d dbs x %d partitions x %d versions, one node holding all: %d watches, %d ephemeral znodes, %d znodes on the server",
			dbs, parts, versions, watches, eph, znodes)
		if out, err := srv.FourLetter("wchc"); err == nil {
			t.Logf("data watches:\n%s", out)
		}
		if watches != wantWatches {
			t.Errorf("watches = %d, want %d (nodes/, partitions/, pins/, one per db, one per version)", watches, wantWatches)
		}
		if want := 1 + dbs*parts*versions; eph != want {
			t.Errorf("ephemeral znodes = %d, want %d", eph, want)
		}
	}
}

// A storaged restarted within its session timeout finds its entries
// still owned by the old session; it must take them over, or they would
// vanish when the old session expires.
func TestRestartTakesOverEntries(t *testing.T) {
	srv := zktest.Start(t)
	p := srv.Proxy(t)
	ctx := context.Background()
	const addr = "127.0.0.1:9100"
	old := open(t, p.Addr())
	if err := old.RegisterNode(ctx, topo.Node{ID: "old", Addr: addr}); err != nil {
		t.Fatal(err)
	}
	if _, err := old.PublishVersion(ctx, "db", "v1", topo.VersionInfo{NumPartitions: 1}); err != nil {
		t.Fatal(err)
	}
	if err := old.PublishPartition(ctx, "db", "v1", 0, addr); err != nil {
		t.Fatal(err)
	}
	p.Cut() // the old process is gone; its session lives on for a while

	fresh := open(t, srv.Addr())
	if err := fresh.RegisterNode(ctx, topo.Node{ID: "new", Addr: addr}); err != nil {
		t.Fatal(err)
	}
	if err := fresh.PublishPartition(ctx, "db", "v1", 0, addr); err != nil {
		t.Fatal(err)
	}
	w := open(t, srv.Addr())
	topotest.WaitMap(t, w, "the new registration", func(m *topo.Map) bool { return m.Nodes[addr].ID == "new" })
	// Once the old session has surely expired, the entries are still
	// there.
	time.Sleep(3 * sessionTimeout)
	out, err := srv.FourLetter("cons")
	if err != nil {
		t.Fatal(err)
	}
	m := w.Map()
	if m.Nodes[addr].ID != "new" || len(m.Replicas("db", "v1", 0)) != 1 {
		t.Fatalf("after the old session expired: %+v %v\nconnections:\n%s", m.Nodes, m.Version("db", "v1"), out)
	}
}

// Close returns promptly even while the server is down.
func TestCloseDuringOutage(t *testing.T) {
	srv := zktest.Start(t)
	c := open(t, srv.Addr())
	if err := c.RegisterNode(context.Background(), topo.Node{Addr: "127.0.0.1:9200"}); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	start := time.Now()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Fatalf("Close took %v", took)
	}
	t.Logf("Close during an outage took %v", time.Since(start))
}

// A server name that does not resolve yet is an outage like any other:
// Open succeeds and calls say ErrUnavailable at once.
func TestUnresolvableServerIsAnOutage(t *testing.T) {
	c := open0(t, zktopo.Options{Servers: []string{"zk-not-there-yet.invalid:2181"}, Cluster: "c"})
	start := time.Now()
	err := c.RegisterNode(context.Background(), topo.Node{Addr: "127.0.0.1:1"})
	if !errors.Is(err, topo.ErrUnavailable) || time.Since(start) > 5*time.Second {
		t.Fatalf("RegisterNode = %v after %v, want ErrUnavailable at once", err, time.Since(start))
	}
	if c.Connected() || c.Map() == nil {
		t.Fatalf("Connected %v, map %v", c.Connected(), c.Map())
	}
}

// A sequins-style prefix with slashes works; bad names are refused.
func TestPrefixes(t *testing.T) {
	srv := zktest.Start(t)
	opts := zktopo.Options{Servers: []string{srv.Addr()}, Cluster: "c", Prefix: "/services/spangle/"}
	c := open0(t, opts)
	w := open0(t, opts)
	ctx, cancel := context.WithTimeout(context.Background(), topotest.Timeout)
	defer cancel()
	if err := c.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.RegisterNode(ctx, topo.Node{Addr: "127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	topotest.WaitMap(t, w, "the node", func(m *topo.Map) bool { return len(m.Nodes) == 1 })
	for _, bad := range []zktopo.Options{
		{Servers: []string{srv.Addr()}, Cluster: "a/b"},
		{Servers: []string{srv.Addr()}, Cluster: "c", Prefix: "x//y"},
		{Servers: []string{srv.Addr()}, Cluster: ""},
	} {
		if _, err := zktopo.Open(bad); !errors.Is(err, topo.ErrBadName) {
			t.Errorf("Open(%+v) = %v, want ErrBadName", bad, err)
		}
	}
	if _, err := zktopo.Open(zktopo.Options{Cluster: "c"}); err == nil {
		t.Error("Open without servers succeeded")
	}
}

func open0(t *testing.T, opts zktopo.Options) *zktopo.Conn {
	opts.Logger = zaptest.NewLogger(t)
	opts.SessionTimeout = sessionTimeout
	c, err := zktopo.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// mntr reads one counter of the server's mntr report.
func mntr(t *testing.T, srv *zktest.Server, key string) int {
	t.Helper()
	out, err := srv.FourLetter("mntr")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, key); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatalf("mntr: %q", line)
			}
			return n
		}
	}
	t.Fatalf("mntr has no %q:\n%s", key, out)
	return 0
}
