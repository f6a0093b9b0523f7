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
	"go.uber.org/zap/zaptest/observer"

	"spangle/shared/topo"
	"spangle/shared/topo/topotest"
	"spangle/shared/topo/zktopo"
	"spangle/shared/zktest"
)

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
