package zktopo_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"spangle/shared/topo"
	"spangle/shared/topo/topotest"
	"spangle/shared/topo/zktopo"
	"spangle/shared/zktest"
)

// The cluster's credential and the server's superuser in these tests.
const (
	clusterUser = "spangle"
	clusterCred = clusterUser + ":" + secretPW
	superCred   = "super:super-" + secretPW
)

func credential(t testing.TB, s string) zktopo.Credential {
	t.Helper()
	c, err := zktopo.ParseCredential(s)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// openWith opens a Conn on addr with opts (of the test's cluster unless
// they name one), and waits for its session unless wait is false.
func openWith(t *testing.T, addr string, opts zktopo.Options, wait bool) *zktopo.Conn {
	t.Helper()
	opts.Servers = []string{addr}
	if opts.Cluster == "" {
		opts.Cluster = cluster(t)
	}
	opts.SessionTimeout = sessionTimeout
	if opts.Logger == nil {
		opts.Logger = zaptest.NewLogger(t)
	}
	c, err := zktopo.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if wait {
		ctx, cancel := context.WithTimeout(context.Background(), topotest.Timeout)
		defer cancel()
		if err := c.WaitConnected(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// populate makes c publish one of everything a storaged publishes: its
// node, a version and its partitions, an election entry, a decision with
// an assignment, and a pin.
func populate(t *testing.T, c *zktopo.Conn, addr string) {
	t.Helper()
	ctx := context.Background()
	if err := c.RegisterNode(ctx, topo.Node{ID: "n1", Addr: addr}); err != nil {
		t.Fatalf("RegisterNode: %v", err)
	}
	if _, err := c.PublishVersion(ctx, "db", "v1", topo.VersionInfo{NumPartitions: 2}); err != nil {
		t.Fatalf("PublishVersion: %v", err)
	}
	for p := range 2 {
		if err := c.PublishPartition(ctx, "db", "v1", p, addr); err != nil {
			t.Fatalf("PublishPartition: %v", err)
		}
	}
	l, err := c.Campaign(ctx, addr)
	if err != nil {
		t.Fatalf("Campaign: %v", err)
	}
	ring, err := c.Ring(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.LastDecision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f := topo.Fence{Token: l.Token(), Ring: ring, Epoch: d.Epoch}
	a := topo.Assignment{DB: "db", Version: "v1", Strategy: "sequins", Replicas: [][]string{{addr}, {addr}}}
	if _, err := c.Commit(ctx, f, addr, []topo.Assignment{a}); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if err := c.SetPin(ctx, l.Token(), "db", topo.Pin{Version: "v1", Generation: 1}); err != nil {
		t.Fatalf("SetPin: %v", err)
	}
}

// walk returns every znode under root with its ACL, read as the
// superuser.
func walk(t *testing.T, r *zktest.Raw, root string) map[string][]zk.ACL {
	t.Helper()
	out := map[string][]zk.ACL{}
	var visit func(p string)
	visit = func(p string) {
		out[p] = r.ACL(p)
		kids, _, err := r.Conn.Children(p)
		if err != nil {
			t.Fatalf("listing %s: %v", p, err)
		}
		for _, k := range kids {
			visit(p + "/" + k)
		}
	}
	visit(root)
	return out
}

func digestOf(cred string) zk.ACL {
	user, pw, _ := strings.Cut(cred, ":")
	return zk.DigestACL(zk.PermAll, user, pw)[0]
}

func sameACL(a, b []zk.ACL) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		found := false
		for _, y := range b {
			found = found || x == y
		}
		if !found {
			return false
		}
	}
	return true
}

// TestACLOnEveryZnode: with a credential, every znode the cluster
// creates, parents included, lets only its identity change it, and
// anyone (acl_read world) or nobody else (auth) read it; the prefix
// above the cluster lets anyone create, so that clusters with other
// credentials can share it.
func TestACLOnEveryZnode(t *testing.T) {
	srv := zktest.StartWith(t, zktest.Options{Super: superCred})
	super := srv.RawAuth(t, superCred)
	for _, read := range []string{zktopo.ReadWorld, zktopo.ReadAuth} {
		t.Run(read, func(t *testing.T) {
			c := openWith(t, srv.Addr(), zktopo.Options{Auth: credential(t, clusterCred), ReadACL: read, Prefix: "acl-" + read}, true)
			populate(t, c, "127.0.0.1:9000")
			world := zk.ACL{Perms: zk.PermRead, Scheme: "world", ID: "anyone"}
			wantCluster := []zk.ACL{digestOf(clusterCred), world}
			wantPrefix := []zk.ACL{digestOf(clusterCred), {Perms: zk.PermRead | zk.PermCreate, Scheme: "world", ID: "anyone"}}
			if read == zktopo.ReadAuth {
				wantCluster = wantCluster[:1]
				wantPrefix[1].Perms = zk.PermCreate
			}
			all := walk(t, super, "/acl-"+read)
			root := "/acl-" + read + "/" + cluster(t) + "/v1"
			for _, p := range []string{root + "/nodes/127.0.0.1:9000@127.0.0.1:9000", root + "/partitions/db/v1/1@127.0.0.1:9000",
				root + "/pins/db", root + "/assignments/db/v1", root + "/decision"} {
				if _, ok := all[p]; !ok {
					t.Errorf("%s was not created; the tree: %v", p, keys(all))
				}
			}
			elections := 0
			for p, acl := range all {
				want := wantCluster
				if p == "/acl-"+read {
					want = wantPrefix
				}
				if strings.HasPrefix(p, root+"/election/") {
					elections++
				}
				if !sameACL(acl, want) {
					t.Errorf("%s: ACL %v, want %v", p, acl, want)
				}
			}
			if elections != 1 {
				t.Errorf("%d election entries, want 1: %v", elections, keys(all))
			}
			t.Logf("%d znodes checked", len(all))
		})
	}
}

func keys(m map[string][]zk.ACL) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestWithoutCredentialNothingIsWritten: a client without the cluster's
// credential, or with a wrong password, cannot register a node, publish
// a version, a partition or a pin, or enter the election; each error is
// topo.ErrDenied and names the znode. Raw writes fail the same way.
func TestWithoutCredentialNothingIsWritten(t *testing.T) {
	srv := zktest.Start(t)
	owner := openWith(t, srv.Addr(), zktopo.Options{Auth: credential(t, clusterCred)}, true)
	populate(t, owner, "127.0.0.1:9000")
	name := cluster(t)
	root := "/spangle/" + name + "/v1"
	for _, who := range []struct {
		name string
		auth zktopo.Credential
	}{{"none", zktopo.Credential{}}, {"wrong-password", credential(t, clusterUser+":not-the-password")}} {
		t.Run(who.name, func(t *testing.T) {
			core, logs := observer.New(zapcore.DebugLevel)
			c := openWith(t, srv.Addr(), zktopo.Options{Cluster: name, Auth: who.auth, Logger: zap.New(core)}, true)
			ctx, cancel := context.WithTimeout(context.Background(), topotest.Timeout)
			defer cancel()
			const addr = "127.0.0.1:6666"
			denied := func(what string, err error, path string) {
				t.Helper()
				if !errors.Is(err, topo.ErrDenied) || !errors.Is(err, zk.ErrNoAuth) {
					t.Errorf("%s = %v, want topo.ErrDenied", what, err)
					return
				}
				if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "not authenticated") {
					t.Errorf("%s: %q does not name %s", what, err, path)
				}
				t.Logf("%s: %v", what, err)
			}
			denied("RegisterNode", c.RegisterNode(ctx, topo.Node{ID: "rogue", Addr: addr}), root+"/nodes/"+addr+"@"+addr)
			_, err := c.PublishVersion(ctx, "db", "v2", topo.VersionInfo{NumPartitions: 1})
			denied("PublishVersion of a new version", err, root+"/partitions/db/v2")
			_, err = c.PublishVersion(ctx, "newdb", "v1", topo.VersionInfo{NumPartitions: 1})
			denied("PublishVersion of a new db", err, root+"/partitions/newdb")
			denied("PublishPartition", c.PublishPartition(ctx, "db", "v1", 0, addr), root+"/partitions/db/v1/0@"+addr)
			_, err = c.Campaign(ctx, addr)
			denied("Campaign", err, root+"/election")
			// An existing version's info and the owner's pin stay.
			m := topotest.WaitMap(t, owner, "the owner's map", func(m *topo.Map) bool { return m.PinOf("db").Version == "v1" })
			if _, ok := m.Nodes[addr]; ok {
				t.Error("the rogue node is registered")
			}
			if r := m.Replicas("db", "v1", 0); len(r) != 1 {
				t.Errorf("replicas of db/v1/0: %v", r)
			}
			// The refusal is logged once at Error, naming the znode, and
			// never with the password.
			errs := logs.FilterLevelExact(zapcore.ErrorLevel).All()
			if len(errs) != 1 || !strings.Contains(errs[0].ContextMap()["error"].(string), root) {
				t.Errorf("Error logs: %v", errs)
			}
			assertNoSecret(t, logs)

			// Raw clients fare no better, even on what exists.
			raw := srv.Raw(t)
			if !who.auth.IsZero() {
				raw = srv.RawAuth(t, clusterUser+":not-the-password")
			}
			for _, w := range []struct {
				what string
				err  func() error
			}{
				{"set a pin", func() error {
					_, err := raw.Conn.Set(root+"/pins/db", []byte(`{"version":"v0","generation":9}`), -1)
					return err
				}},
				{"create a pin", func() error {
					_, err := raw.Conn.Create(root+"/pins/other", nil, 0, zk.WorldACL(zk.PermAll))
					return err
				}},
				{"set a version", func() error { _, err := raw.Conn.Set(root+"/partitions/db/v1", []byte(`{}`), -1); return err }},
				{"delete a node", func() error { return raw.Conn.Delete(root+"/nodes/127.0.0.1:9000@127.0.0.1:9000", -1) }},
				{"open an ACL", func() error { _, err := raw.Conn.SetACL(root+"/nodes", zk.WorldACL(zk.PermAll), -1); return err }},
			} {
				if err := w.err(); !errors.Is(err, zk.ErrNoAuth) {
					t.Errorf("a raw client could %s: %v", w.what, err)
				}
			}
		})
	}
}

// assertNoSecret fails if the password is in any message or field.
func assertNoSecret(t *testing.T, logs *observer.ObservedLogs) {
	t.Helper()
	for _, e := range logs.All() {
		if strings.Contains(e.Message, secretPW) {
			t.Errorf("the password is logged: %q", e.Message)
		}
		for k, v := range e.ContextMap() {
			if s, ok := v.(string); ok && strings.Contains(s, secretPW) {
				t.Errorf("the password is logged in %s: %q", k, s)
			}
		}
	}
}

// TestReadersWithoutCredential: with acl_read world a router without
// the secret mirrors the cluster; with acl_read auth it sees nothing,
// and says why once, while one with the credential mirrors it.
func TestReadersWithoutCredential(t *testing.T) {
	srv := zktest.Start(t)
	for _, read := range []string{zktopo.ReadWorld, zktopo.ReadAuth} {
		t.Run(read, func(t *testing.T) {
			prefix := "read-" + read
			owner := openWith(t, srv.Addr(), zktopo.Options{Auth: credential(t, clusterCred), ReadACL: read, Prefix: prefix}, true)
			populate(t, owner, "127.0.0.1:9000")
			core, logs := observer.New(zapcore.DebugLevel)
			anon := openWith(t, srv.Addr(), zktopo.Options{Prefix: prefix, Logger: zap.New(core)}, true)
			authed := openWith(t, srv.Addr(), zktopo.Options{Prefix: prefix, Auth: credential(t, clusterCred)}, true)
			full := func(m *topo.Map) bool {
				return len(m.Nodes) == 1 && m.Version("db", "v1").Complete(1) && m.PinOf("db").Version == "v1"
			}
			topotest.WaitMap(t, authed, "the authenticated reader's map", full)
			if read == zktopo.ReadWorld {
				topotest.WaitMap(t, anon, "the anonymous reader's map", full)
				return
			}
			// Give the anonymous reader time to list (and fail) a few
			// times.
			deadline := time.Now().Add(3 * time.Second)
			for time.Now().Before(deadline) && len(logs.FilterLevelExact(zapcore.ErrorLevel).All()) == 0 {
				time.Sleep(20 * time.Millisecond)
			}
			time.Sleep(1500 * time.Millisecond)
			m := anon.Map()
			if len(m.Nodes) != 0 || m.Version("db", "v1") != nil {
				t.Errorf("a reader without the credential sees %v / %+v", m.Nodes, m.Version("db", "v1"))
			}
			errs := logs.FilterLevelExact(zapcore.ErrorLevel).All()
			if len(errs) != 1 || !strings.Contains(errs[0].ContextMap()["error"].(string), "/"+prefix+"/") {
				t.Errorf("want one Error naming the znode, got %v", errs)
			}
			if warns := logs.FilterLevelExact(zapcore.WarnLevel).All(); len(warns) != 0 {
				t.Errorf("refused listings warned again and again: %v", warns)
			}
			raw := srv.Raw(t)
			if _, _, err := raw.Conn.Get("/" + prefix + "/" + cluster(t) + "/v1/pins/db"); !errors.Is(err, zk.ErrNoAuth) {
				t.Errorf("a raw reader without the credential read a pin: %v", err)
			}
		})
	}
}

// TestWorldWritableWarnsOnce: a Conn with a credential that finds the
// cluster's znodes open to every client (created before the credential
// was set) warns once; zk-acl's SetClusterACL then gives them the
// cluster's ACL, after which the old world-writable znodes are closed
// and a new Conn finds nothing to warn of.
func TestWorldWritableWarnsOnce(t *testing.T) {
	srv := zktest.StartWith(t, zktest.Options{Super: superCred})
	ctx := context.Background()
	// The cluster as it ran without a credential.
	old := openWith(t, srv.Addr(), zktopo.Options{}, true)
	populate(t, old, "127.0.0.1:9000")
	root := "/spangle/" + cluster(t)

	core, logs := observer.New(zapcore.DebugLevel)
	c := openWith(t, srv.Addr(), zktopo.Options{Auth: credential(t, clusterCred), Logger: zap.New(core)}, true)
	// It works meanwhile: the world ACL lets it do everything.
	if err := c.RegisterNode(ctx, topo.Node{ID: "n2", Addr: "127.0.0.1:9001"}); err != nil {
		t.Fatal(err)
	}
	warned := func() []observer.LoggedEntry {
		return logs.FilterLevelExact(zapcore.WarnLevel).FilterMessageSnippet("open to every ZooKeeper client").All()
	}
	deadline := time.Now().Add(topotest.Timeout)
	for len(warned()) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	w := warned()
	if len(w) != 1 {
		t.Fatalf("%d warnings, want 1: %v", len(w), logs.All())
	}
	f := w[0].ContextMap()
	if f["world_writable"].(int64) < 5 || !strings.HasPrefix(f["example"].(string), root) {
		t.Errorf("the warning says %v", f)
	}
	t.Logf("warned: %s %v", w[0].Message, f)

	// The migration: a dry run changes nothing; the run changes all.
	opts := zktopo.Options{Servers: []string{srv.Addr()}, Cluster: cluster(t), Auth: credential(t, clusterCred)}
	var listed []string
	dry, err := zktopo.SetClusterACL(ctx, opts, true, func(p string, _ []zk.ACL) { listed = append(listed, p) })
	if err != nil || dry.Changed == 0 || dry.Changed != len(listed) || dry.Root != root {
		t.Fatalf("dry run: %+v, %v (listed %d)", dry, err, len(listed))
	}
	raw := srv.Raw(t)
	if err := raw.Conn.Delete(root+"/v1/pins/db", -1); err != nil {
		t.Fatalf("after the dry run, the pin should still be open: %v", err)
	}
	rep, err := zktopo.SetClusterACL(ctx, opts, false, nil)
	if err != nil || rep.Changed == 0 || rep.Changed < dry.Changed-1 {
		t.Fatalf("SetClusterACL: %+v, %v (dry run %+v)", rep, err, dry)
	}
	t.Logf("dry run %+v; run %+v", dry, rep)
	for path, acl := range walk(t, srv.RawAuth(t, superCred), root) {
		if want := []zk.ACL{digestOf(clusterCred), {Perms: zk.PermRead, Scheme: "world", ID: "anyone"}}; !sameACL(acl, want) {
			t.Errorf("%s after the migration: %v", path, acl)
		}
	}
	if _, err := raw.Conn.Create(root+"/v1/nodes/rogue@127.0.0.1:1", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("registering without the credential after the migration: %v", err)
	}
	again, err := zktopo.SetClusterACL(ctx, opts, false, nil)
	if err != nil || again.Changed != 0 {
		t.Errorf("a second run: %+v, %v", again, err)
	}
	// The running Conns go on, and a new one warns of nothing.
	if err := c.PublishPartition(ctx, "db", "v1", 1, "127.0.0.1:9001"); err != nil {
		t.Errorf("publishing after the migration: %v", err)
	}
	core2, logs2 := observer.New(zapcore.DebugLevel)
	openWith(t, srv.Addr(), zktopo.Options{Auth: credential(t, clusterCred), Logger: zap.New(core2)}, true)
	deadline = time.Now().Add(topotest.Timeout)
	for len(logs2.FilterMessageSnippet("carry its ACL").All()) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := len(logs2.FilterMessageSnippet("carry its ACL").All()); n != 1 || len(logs2.FilterLevelExact(zapcore.WarnLevel).All()) != 0 {
		t.Errorf("after the migration: %v", logs2.All())
	}
	// Without the credential it cannot run.
	if _, err := zktopo.SetClusterACL(ctx, zktopo.Options{Servers: opts.Servers, Cluster: opts.Cluster}, false, nil); err == nil {
		t.Error("SetClusterACL without a credential ran")
	}
}

// TestReauthAfterReconnectAndExpiry: the client gives the credential
// again on every connection: after a reconnection (same session) and
// after the session expired, the Conn publishes again under the ACL and
// its new writes are accepted.
func TestReauthAfterReconnectAndExpiry(t *testing.T) {
	srv := zktest.StartWith(t, zktest.Options{Super: superCred})
	p := srv.Proxy(t)
	core, logs := observer.New(zapcore.DebugLevel)
	c := openWith(t, p.Addr(), zktopo.Options{Auth: credential(t, clusterCred), Logger: zap.New(core)}, true)
	ctx := context.Background()
	const addr = "127.0.0.1:9300"
	if err := c.RegisterNode(ctx, topo.Node{ID: "n", Addr: addr}); err != nil {
		t.Fatal(err)
	}
	super := srv.RawAuth(t, superCred)
	nodePath := "/spangle/" + cluster(t) + "/v1/nodes/" + addr + "@" + addr
	owner := func() int64 {
		ok, st, err := super.Conn.Exists(nodePath)
		if err != nil || !ok {
			return 0
		}
		return st.EphemeralOwner
	}
	first := owner()
	if first == 0 {
		t.Fatal("the node is not registered")
	}
	publish := func(version string) {
		t.Helper()
		deadline := time.Now().Add(topotest.Timeout)
		for {
			_, err := c.PublishVersion(ctx, "db", version, topo.VersionInfo{NumPartitions: 1})
			if err == nil {
				err = c.PublishPartition(ctx, "db", version, 0, addr)
			}
			if err == nil {
				return
			}
			if !errors.Is(err, topo.ErrUnavailable) || time.Now().After(deadline) {
				t.Fatalf("publishing %s: %v", version, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	// A reconnection within the session: a new connection, the same
	// session, and ZooKeeper forgets a connection's credential.
	p.Cut()
	time.Sleep(200 * time.Millisecond)
	p.Heal()
	publish("v1")
	if got := owner(); got != first {
		// Only a machine too loaded to reconnect within the session
		// timeout gets here; the new session was authenticated too.
		t.Logf("the session expired during the reconnection (owner %x, was %x)", got, first)
		first = got
	}

	// A session expiry: everything is published again by a new session.
	p.Cut()
	time.Sleep(2 * sessionTimeout)
	p.Heal()
	deadline := time.Now().Add(topotest.Timeout)
	for got := owner(); got == 0 || got == first; got = owner() {
		if time.Now().After(deadline) {
			t.Fatalf("the node was not registered again by a new session (owner %x)", got)
		}
		time.Sleep(50 * time.Millisecond)
	}
	publish("v2")
	want := []zk.ACL{digestOf(clusterCred), {Perms: zk.PermRead, Scheme: "world", ID: "anyone"}}
	for _, path := range []string{nodePath, "/spangle/" + cluster(t) + "/v1/partitions/db/v2/0@" + addr} {
		if acl := super.ACL(path); !sameACL(acl, want) {
			t.Errorf("%s after the expiry: ACL %v, want %v", path, acl, want)
		}
	}
	if errs := logs.FilterLevelExact(zapcore.ErrorLevel).All(); len(errs) != 0 {
		t.Errorf("errors logged: %v", errs)
	}
	if n := len(logs.FilterMessage("zktopo: session expired; a new one will publish everything again").All()); n < 1 {
		t.Errorf("%d session expiries logged, want 1", n)
	}
	assertNoSecret(t, logs)
}
