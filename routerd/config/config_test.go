package config

import (
	"io"
	"os"
	"path/filepath"
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
		c.CacheSize != DefaultCacheSize || c.HedgeBudget != 0.1 || c.MinReplication != 1 ||
		c.GCHeadroom != DefaultGCHeadroom || c.BatchMaxKeys != 1000 || c.BatchMaxBytes != 1<<20 {
		t.Fatalf("defaults %+v", c)
	}
}

func TestFileAndFlags(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "routerd.toml")
	os.WriteFile(path, []byte(`
bind = "0.0.0.0:7000"
zk = ["z1:2181", "z2:2181"]
cluster = "prod"
proxy_timeout = "200ms"
replication = 4
cache_size = 1024
gc_headroom = 1048576
`), 0o644)
	c, err := Parse([]string{"--config", path, "--cache-size", "0", "--min-replication=2"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Bind != "0.0.0.0:7000" || !c.UseZK() || len(c.ZK) != 2 || c.Cluster != "prod" ||
		c.ProxyTimeout != 200*time.Millisecond || c.ProxyStageTimeout != 50*time.Millisecond ||
		c.CacheSize != 0 || c.MinReplication != 2 || len(c.Storaged) != 0 || c.GCHeadroom != 1<<20 {
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
		{"--zk", "z:2181"},
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
		{"--batch-max-keys", "0"},
		{"--batch-max-bytes", "-1"},
		{"extra"},
	} {
		if _, err := Parse(args, io.Discard); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
	c, err := Parse([]string{"--cluster", "c", "--storaged", ""}, io.Discard)
	if err != nil || c.ZK[0] != DefaultZK {
		t.Fatalf("cluster alone: %v %+v", err, c)
	}
	c, err = Parse([]string{"--storaged", "http://a:1, http://b:2/"}, io.Discard)
	if err != nil || len(c.Storaged) != 2 {
		t.Fatalf("two storaged: %v %+v", err, c)
	}
	if a, _ := StoragedAddr("http://b:2/"); a != "b:2" {
		t.Fatalf("addr %q", a)
	}
}
