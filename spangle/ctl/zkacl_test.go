package ctl

import (
	"bytes"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"

	"spangle/shared/zktest"
)

// TestZKACL: spangle zk-acl lists (--dry-run) and then sets the
// cluster's ACL on znodes created open to all, with the credential from
// the environment, never printing the password; bad usage exits 2.
func TestZKACL(t *testing.T) {
	const pw = "cli-Secret-Pa55"
	srv := zktest.Start(t)
	raw := srv.Raw(t)
	raw.Put("/spangle/prod/v1/nodes/a@127.0.0.1:1", nil)
	raw.Put("/spangle/prod/v1/partitions/db/v1", []byte(`{"num_partitions":1}`))
	raw.Put("/spangle/other/v1/nodes/b@127.0.0.1:2", nil)
	env := func(k string) string {
		if k == "SPANGLE_ZK_AUTH" {
			return "spangle:" + pw
		}
		return ""
	}
	zkacl := func(getenv func(string) string, args ...string) (int, string) {
		var out bytes.Buffer
		code := ZKACL(args, getenv, &out, &out)
		if strings.Contains(out.String(), pw) {
			t.Errorf("zk-acl %v printed the password: %s", args, out.String())
		}
		return code, out.String()
	}
	code, out := zkacl(env, "--zk", srv.Addr(), "--cluster", "prod", "--dry-run")
	if code != 0 || !strings.Contains(out, "would set the ACL of /spangle/prod/v1/nodes/a@127.0.0.1:1 (was world:anyone:cdrwa)") ||
		!strings.Contains(out, "/spangle/prod: 7 znodes checked, would set the ACL of 7") {
		t.Fatalf("dry run: %d\n%s", code, out)
	}
	if acl := raw.ACL("/spangle/prod/v1/nodes"); acl[0].Scheme != "world" {
		t.Fatalf("the dry run changed an ACL: %v", acl)
	}
	code, out = zkacl(env, "--zk", srv.Addr(), "--cluster", "prod")
	if code != 0 || !strings.Contains(out, "set the ACL of 7") {
		t.Fatalf("run: %d\n%s", code, out)
	}
	t.Logf("zk-acl:\n%s", out)
	want := zk.DigestACL(zk.PermAll, "spangle", pw)[0]
	// ZooKeeper shows a digest's hash only to a client it lets
	// administer the znode.
	authed := srv.RawAuth(t, "spangle:"+pw)
	for _, p := range []string{"/spangle/prod", "/spangle/prod/v1/nodes/a@127.0.0.1:1", "/spangle/prod/v1/partitions/db/v1"} {
		if acl := authed.ACL(p); len(acl) != 2 || acl[0] != want || acl[1] != (zk.ACL{Perms: zk.PermRead, Scheme: "world", ID: "anyone"}) {
			t.Errorf("%s: %v", p, acl)
		}
	}
	for _, p := range []string{"/spangle", "/spangle/other/v1/nodes"} {
		if acl := raw.ACL(p); len(acl) != 1 || acl[0].Scheme != "world" {
			t.Errorf("%s, outside the cluster, changed: %v", p, acl)
		}
	}
	if _, err := raw.Conn.Create("/spangle/prod/v1/nodes/rogue@127.0.0.1:3", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != zk.ErrNoAuth {
		t.Errorf("registering without the credential after zk-acl: %v", err)
	}
	if code, out := zkacl(env, "--zk", srv.Addr(), "--cluster", "prod", "--acl-read", "auth"); code != 0 || !strings.Contains(out, "set the ACL of 7") {
		t.Errorf("--acl-read auth: %d\n%s", code, out)
	}
	if _, _, err := raw.Conn.Get("/spangle/prod/v1/partitions/db/v1"); err != zk.ErrNoAuth {
		t.Errorf("reading without the credential after --acl-read auth: %v", err)
	}

	none := func(string) string { return "" }
	for _, args := range [][]string{
		{"--cluster", "prod"},
		{"--zk", srv.Addr(), "extra"},
		{"--zk", srv.Addr(), "--acl-read", "everyone"},
	} {
		if code, out := zkacl(env, args...); code != 2 {
			t.Errorf("zk-acl %v = %d, want 2\n%s", args, code, out)
		}
	}
	if code, out := zkacl(none, "--zk", srv.Addr()); code != 2 || !strings.Contains(out, "SPANGLE_ZK_AUTH") {
		t.Errorf("without a credential: %d\n%s", code, out)
	}
	// Through Main, as the binary runs it: the usage is known.
	var o, e bytes.Buffer
	if code := Main([]string{"zk-acl", "--help"}, &o, &e); code != 0 || !strings.Contains(e.String(), "--zk-auth-file") {
		t.Errorf("zk-acl --help: %d %s", code, e.String())
	}
}
