package daemon

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"spangle/shared/zktest"
	"spangle/storaged/config"
	"spangle/storaged/internal/testutil"
)

const zkSecret = "zk-Secret-0f-the-cluster"

// TestZKCredentialNeverShown: a storaged given the ZooKeeper credential
// in [zk] auth_file registers under the cluster's ACL, and the password
// is in none of its logs (at debug), status pages, health, metrics or
// its printed config. A second storaged without the credential cannot
// register: it says so, naming the znode, and stays out of nodes/.
func TestZKCredentialNeverShown(t *testing.T) {
	zs := zktest.StartWith(t, zktest.Options{Super: "super:" + zkSecret + "-super"})
	td := testutil.TestData(t)
	authFile := filepath.Join(t.TempDir(), "zk-auth")
	if err := os.WriteFile(authFile, []byte("spangle:"+zkSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := func() config.Config {
		cfg := config.Default()
		cfg.Source = "file://" + filepath.Join(td, "healthy")
		cfg.LocalStore = t.TempDir()
		cfg.Bind = "127.0.0.1:0"
		cfg.ZK.Servers = []string{zs.Addr()}
		cfg.ZK.SessionTimeout = 5 * time.Second
		cfg.Sharding.Enabled = true
		cfg.Sharding.Replication = 1
		cfg.Sharding.TimeToConverge = 500 * time.Millisecond
		return cfg
	}
	cfg := base()
	cfg.ZK.AuthFile = authFile
	core, logs := observer.New(zap.DebugLevel)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d, err := Start(ctx, cfg, zap.New(core))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "healthy", func() bool { c, _, _ := httpGet(t, "http://"+d.Addr+"/healthz"); return c == 200 })

	var shown []string
	for _, path := range []string{"/", "/healthz", "/metrics"} {
		for _, accept := range []string{"text/html", "application/json"} {
			req, _ := http.NewRequest("GET", "http://"+d.Addr+path, nil)
			req.Header.Set("Accept", accept)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Errorf("GET %s: %d", path, resp.StatusCode)
			}
			shown = append(shown, path+" "+accept+": "+string(b))
		}
	}
	shown = append(shown, fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg))

	// The registration carries the cluster's ACL.
	super := zs.RawAuth(t, "super:"+zkSecret+"-super")
	nodes, _, err := super.Conn.Children("/spangle/spangle/v1/nodes")
	if err != nil || len(nodes) != 1 {
		t.Fatalf("nodes/: %v, %v", nodes, err)
	}
	acl := super.ACL("/spangle/spangle/v1/nodes/" + nodes[0])
	if len(acl) != 2 || acl[0] != zk.DigestACL(zk.PermAll, "spangle", zkSecret)[0] {
		t.Errorf("the node's ACL: %v", acl)
	}

	// A storaged without the credential.
	core2, logs2 := observer.New(zap.DebugLevel)
	rogue, err := Start(ctx, base(), zap.New(core2))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the refusal", func() bool {
		return logs2.FilterMessageSnippet("ACL refused").Len()+logs2.FilterMessageSnippet("refuses this node").Len() > 0
	})
	e := append(logs2.FilterMessageSnippet("ACL refused").All(), logs2.FilterMessageSnippet("refuses this node").All()...)[0]
	if msg := fmt.Sprint(e.ContextMap()["error"]); !strings.Contains(msg, "/spangle/spangle/v1/nodes/") || !strings.Contains(msg, "not authenticated") {
		t.Errorf("the refusal does not name the znode: %q", msg)
	}
	if nodes, _, _ := super.Conn.Children("/spangle/spangle/v1/nodes"); len(nodes) != 1 {
		t.Errorf("nodes/ after a storaged without the credential started: %v", nodes)
	}
	_ = rogue

	cancel()
	d.Wait()
	rogue.Wait()
	for _, e := range append(logs.All(), logs2.All()...) {
		line := e.Message + fmt.Sprint(e.ContextMap())
		if strings.Contains(line, zkSecret) {
			t.Errorf("the password is logged: %s", line)
		}
	}
	for _, s := range shown {
		if strings.Contains(s, zkSecret) {
			t.Errorf("the password is shown: %.300s", s)
		}
	}
	if logs.FilterMessageSnippet("ZooKeeper credential loaded").Len() != 1 {
		t.Error("where the credential came from is not logged")
	}
}
