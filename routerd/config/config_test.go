package config

import (
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestDefaults(t *testing.T) {
	c, err := Parse(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Bind != DefaultBind || len(c.Storaged) != 1 || c.Storaged[0] != DefaultStoraged || c.UseZK() ||
		c.ProxyTimeout != 100*time.Millisecond || c.ProxyStageTimeout != 50*time.Millisecond ||
		c.CacheSize != DefaultCacheSize || c.HedgeBudget != 0.1 || c.Sharding.MinReplication != 1 ||
		c.GCHeadroom != DefaultGCHeadroom || c.BatchMaxKeys != 1000 || c.BatchMaxBytes != 1<<20 ||
		c.BatchReadTimeout != 5*time.Second || c.BatchReadBytes != 64<<20 ||
		c.BatchKeyTimeout != time.Millisecond || c.BatchTimeout != 10*time.Second {
		t.Fatalf("defaults %+v", c)
	}
}

func TestFileAndFlags(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "routerd.toml")
	os.WriteFile(path, []byte(`
bind = "0.0.0.0:7000"
proxy_timeout = "200ms"
cache_size = 1024
gc_headroom = 1048576

[sharding]
cluster_name = "prod"
replication = 4

[zk]
servers = ["z1:2181", "z2:2181"]
prefix = "sp"
session_timeout = "3s"
connect_timeout = "2s"
`), 0o644)
	c, err := Parse([]string{"--config", path, "--cache-size", "0", "--min-replication=2"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Bind != "0.0.0.0:7000" || !c.UseZK() || len(c.ZK.Servers) != 2 || c.Sharding.ClusterName != "prod" ||
		c.ZK.Prefix != "sp" || c.ZK.SessionTimeout != 3*time.Second || c.ZK.ConnectTimeout != 2*time.Second ||
		c.ProxyTimeout != 200*time.Millisecond || c.ProxyStageTimeout != 50*time.Millisecond ||
		c.CacheSize != 0 || c.Sharding.MinReplication != 2 || len(c.Storaged) != 0 || c.GCHeadroom != 1<<20 ||
		len(c.Deprecated) != 0 {
		t.Fatalf("config %+v", c)
	}
	os.WriteFile(path, []byte("proxy_timout = \"1s\"\n"), 0o644)
	if _, err := Parse([]string{"--config", path}, io.Discard); err == nil || !strings.Contains(err.Error(), "unknown keys") {
		t.Fatalf("typo accepted: %v", err)
	}
}

func TestValidation(t *testing.T) {
	for _, args := range [][]string{
		{"--bind", "nonsense"},
		{"--zk", "z:2181", "--cluster", "c", "--storaged", "http://a:1"},
		{"--storaged", "http://a:1/path"},
		{"--storaged", "https://a:1"},
		{"--storaged", "a:1"},
		{"--proxy-timeout", "0s"},
		{"--proxy-stage-timeout", "1s"},
		{"--hedge-budget", "2"},
		{"--cache-size", "-1"},
		{"--gc-headroom", "-1"},
		{"--min-replication", "0"},
		{"--replication", "0"},
		{"--zk-session-timeout", "0s"},
		{"--zk-connect-timeout", "0s"},
		{"--batch-max-keys", "0"},
		{"--batch-max-bytes", "-1"},
		{"extra"},
	} {
		if _, err := Parse(args, io.Discard); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
	c, err := Parse([]string{"--cluster", "c", "--storaged", ""}, io.Discard)
	if err != nil || c.ZK.Servers[0] != DefaultZK || c.Sharding.ClusterName != "c" {
		t.Fatalf("cluster alone: %v %+v", err, c)
	}
	// As in storaged, the cluster name defaults to spangle.
	c, err = Parse([]string{"--zk", "z:2181"}, io.Discard)
	if err != nil || c.Sharding.ClusterName != DefaultClusterName || c.ZK.Prefix != "spangle" || len(c.Storaged) != 0 {
		t.Fatalf("zk alone: %v %+v", err, c)
	}
	c, err = Parse([]string{"--storaged", "http://a:1, http://b:2/"}, io.Discard)
	if err != nil || len(c.Storaged) != 2 {
		t.Fatalf("two storaged: %v %+v", err, c)
	}
	if a, _ := StoragedAddr("http://b:2/"); a != "b:2" {
		t.Fatalf("addr %q", a)
	}
}

// A file written before [zk] and [sharding] still loads to the same
// config, with a warning naming each new key; the flags win over it as
// before.
func TestOldKeysStillLoad(t *testing.T) {
	dir := t.TempDir()
	oldPath, newPath := filepath.Join(dir, "old.toml"), filepath.Join(dir, "new.toml")
	os.WriteFile(oldPath, []byte(`
zk = ["z1:2181", "z2:2181"]
cluster = "prod"
zk_prefix = "sp"
zk_session_timeout = "3s"
replication = 4
min_replication = 2
proxy_timeout = "200ms"
`), 0o644)
	os.WriteFile(newPath, []byte(`
proxy_timeout = "200ms"
[zk]
servers = ["z1:2181", "z2:2181"]
prefix = "sp"
session_timeout = "3s"
[sharding]
cluster_name = "prod"
replication = 4
min_replication = 2
`), 0o644)
	old, err := Parse([]string{"--config", oldPath}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Parse([]string{"--config", newPath}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	warnings := old.Deprecated
	old.Deprecated = nil
	if !reflect.DeepEqual(old, want) {
		t.Fatalf("old keys give %+v\nnew keys give %+v", old, want)
	}
	wantRenamed := []Renamed{{"zk", "zk.servers"}, {"zk_prefix", "zk.prefix"}, {"zk_session_timeout", "zk.session_timeout"},
		{"cluster", "sharding.cluster_name"}, {"replication", "sharding.replication"}, {"min_replication", "sharding.min_replication"}}
	if !reflect.DeepEqual(warnings, wantRenamed) {
		t.Errorf("deprecated keys %v, want %v", warnings, wantRenamed)
	}

	c, err := Parse([]string{"--config", oldPath, "--cluster", "other", "--min-replication", "1"}, io.Discard)
	if err != nil || c.Sharding.ClusterName != "other" || c.Sharding.MinReplication != 1 || c.Sharding.Replication != 4 {
		t.Fatalf("flags over old keys: %v %+v", err, c)
	}

	// An old key and its new name at once is an error, not a silent pick.
	os.WriteFile(oldPath, []byte("cluster = \"a\"\n[sharding]\ncluster_name = \"b\"\n"), 0o644)
	if _, err := Parse([]string{"--config", oldPath}, io.Discard); err == nil || !strings.Contains(err.Error(), "sharding.cluster_name") {
		t.Fatalf("old and new key at once: %v", err)
	}
	// A typo is still an unknown key after the renaming.
	os.WriteFile(oldPath, []byte("cluster = \"a\"\nproxy_timout = \"1s\"\n"), 0o644)
	if _, err := Parse([]string{"--config", oldPath}, io.Discard); err == nil || !strings.Contains(err.Error(), "unknown keys") {
		t.Fatalf("typo beside an old key: %v", err)
	}
}

func TestBatchReadBounds(t *testing.T) {
	for in, why := range map[string]string{
		"batch_read_timeout = \"0s\"":  "batch_read_timeout",
		"batch_read_bytes = 1048576":   "batch_read_bytes",
		"batch_key_timeout = \"-1ms\"": "batch_key_timeout",
		"batch_timeout = \"0s\"":       "batch_timeout",
	} {
		path := filepath.Join(t.TempDir(), "routerd.toml")
		if err := os.WriteFile(path, []byte(in+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Parse([]string{"--config", path}, io.Discard)
		if err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("%q: %v, want an error naming %s", in, err, why)
		}
	}
}

// TestZKAuthKeys: [zk] auth_file (and the flag) load; acl_read, which
// routerd only checks, must be world or auth.
func TestZKAuthKeys(t *testing.T) {
	c, err := Parse([]string{"--zk", "z:2181", "--zk-auth-file", "/run/secrets/zk"}, io.Discard)
	if err != nil || c.ZK.AuthFile != "/run/secrets/zk" || c.ZK.ACLRead != "world" {
		t.Fatalf("flags: %+v, %v", c.ZK, err)
	}
	path := filepath.Join(t.TempDir(), "routerd.toml")
	if err := os.WriteFile(path, []byte("[zk]\nservers = [\"z:2181\"]\nauth_file = \"/f\"\nacl_read = \"auth\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c = Default()
	if err := Load(path, &c); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil || c.ZK.AuthFile != "/f" || c.ZK.ACLRead != "auth" {
		t.Fatalf("file: %+v, %v", c.ZK, err)
	}
	c.ZK.ACLRead = "everyone"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "zk.acl_read") {
		t.Fatalf("acl_read everyone: %v", err)
	}
}
