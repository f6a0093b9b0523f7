package integration

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"spangle/routerd/config"
	"spangle/shared/topo/zktopo"
	"spangle/shared/zktest"
)

// TestZooKeeperACLReadAuth: in a cluster whose znodes only its
// credential may read (acl_read auth), a routerd given the credential in
// [zk] auth_file serves, and shows the password nowhere (status page,
// /metrics, /healthz); one without it sees no node and serves nothing.
func TestZooKeeperACLReadAuth(t *testing.T) {
	const password = "rt-Secret-0f-the-cluster"
	zks := zktest.Start(t)
	root := source(t, "v1")
	n := startStoraged(t, root)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cred, err := zktopo.ParseCredential("spangle:" + password)
	if err != nil {
		t.Fatal(err)
	}
	all := make([]int, testParts)
	for p := range all {
		all[p] = p
	}
	register(ctx, t, zktopo.Options{Servers: []string{zks.Addr()}, Cluster: "rt", SessionTimeout: 5 * time.Second,
		Auth: cred, ReadACL: zktopo.ReadAuth}, n.addr, all)
	authFile := filepath.Join(t.TempDir(), "zk-auth")
	if err := os.WriteFile(authFile, []byte("spangle:"+password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.ZK.Servers = []string{zks.Addr()}
	cfg.Sharding.ClusterName = "rt"
	cfg.ZK.SessionTimeout = 5 * time.Second
	cfg.CacheSize = 0
	anon := startRouterd(t, cfg, nil, "")
	cfg.ZK.AuthFile = authFile
	rd := startRouterd(t, cfg, nil, testDB)

	client := &http.Client{Timeout: 10 * time.Second}
	code, body, _, _ := get(t, client, rd.base+"/"+testDB+"/"+keyName(3))
	if code != 200 || body != valueOf("v1", keyName(3)) {
		t.Fatalf("with the credential: %d %q", code, body)
	}
	for _, path := range []string{"/", "/healthz", "/metrics"} {
		req, _ := http.NewRequest("GET", rd.base+path, nil)
		req.Header.Set("Accept", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(b), password) {
			t.Errorf("routerd's %s shows the password", path)
		}
	}
	time.Sleep(2 * time.Second)
	if st := anon.r.Server().Status(testDB); st.DBs[testDB].Served != "" {
		t.Errorf("a routerd without the credential serves %s: %+v", testDB, st)
	}
	if code, _, _, _ := get(t, client, anon.base+"/"+testDB+"/"+keyName(3)); code == 200 {
		t.Errorf("a routerd without the credential answered 200")
	}
}
