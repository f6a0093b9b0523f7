package zktopo_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"spangle/shared/topo"
	"spangle/shared/topo/topotest"
	"spangle/shared/topo/zktopo"
	"spangle/shared/zktest"
)

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
