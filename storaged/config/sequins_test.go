package config

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// sequinsFile sets every key of sequins' configuration reference, its
// last release's and the older [zk] ones.
const sequinsFile = `
root = "/data/old-name"
bind = "127.0.0.1:9601"
local_store = "/var/sequins/"
max_parallel_loads = 4
throttle_loads = "800µs"
write_buffer_size = 65536
refresh_period = "10m"
require_success_file = true
content_type = "application/json"
max_download_bandwidth_mb_per_second = 100
goforit_flag_json_path = "/etc/flags.json"

[storage]
compression = "snappy"
block_size = 8192

[s3]
region = "us-west-1"
access_key_id = "AKIDSECRETIDVALUE"
secret_access_key = "topsecretvalue/xyz"
max_retries = 5

[sharding]
enabled = false
replication = 3
min_replication = 1
max_replication = 0
time_to_converge = "5s"
proxy_timeout = "100ms"
proxy_stage_timeout = "50ms"
cluster_name = "sequins"
advertised_hostname = "sequins1.example.com"
shard_id = "sequins1"

[zk]
servers = ["localhost:2181"]
connect_timeout = "1s"
session_timeout = "10s"

[datadog]
url = "localhost:8200"

[debug]
bind = "127.0.0.1:6060"
expvars = true
pprof = false
request_log_enable = false
request_log_file = "/var/log/sequins-requests.log"

[test]
upgrade_delay = "1s"
allow_local_cluster = true
version_remove_timeout = "1s"
[test.s3]
region = "x"
access_key_id = "AKIDTESTSECRET"
secret_access_key = "testsecretvalue"
[test.hang]
db = "x"
file = "y"
`

func TestSequinsConfigStarts(t *testing.T) {
	c := Default()
	if err := Decode(sequinsFile, &c); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.ClusterMode() {
		t.Error("sharding.enabled = false with a [zk] section: cluster mode")
	}
	if c.Source != "/data/old-name" || c.LevelDB.Compression != "snappy" || c.LevelDB.BlockSize != 8192 ||
		c.Sharding.Replication != 3 || c.Sharding.ShardID != "sequins1" || c.S3.Region != "us-west-1" ||
		c.Debug.Bind != "127.0.0.1:6060" || !c.Debug.Expvars || c.Debug.Pprof || c.MaxParallelLoads != 4 ||
		c.RefreshPeriod != 10*time.Minute || c.ContentType != "application/json" {
		t.Errorf("decoded %+v", c)
	}
	got := map[string]Notice{}
	var all strings.Builder
	for _, n := range c.Notices {
		got[n.Key] = n
		all.WriteString(n.String() + "\n")
	}
	for key, use := range map[string]string{
		"root": "source", "storage.compression": "leveldb.compression", "storage.block_size": "leveldb.block_size",
	} {
		if got[key].Use != use {
			t.Errorf("%s: notice %+v, want it read as %s", key, got[key], use)
		}
	}
	for key, why := range map[string]string{
		"sharding.proxy_timeout":       "routerd",
		"sharding.proxy_stage_timeout": "routerd",
		"s3.access_key_id":             "AWS chain",
		"s3.secret_access_key":         "AWS chain",
		"throttle_loads":               "max_parallel_loads",
		"datadog.url":                  "Prometheus",
		"debug.request_log_file":       "request log",
		"test.hang.db":                 "test",
		"zk":                           "standalone",
		"s3.max_retries":               "retries",
		"write_buffer_size":            "spill_size",
		"goforit_flag_json_path":       "feature flags",
	} {
		if n, ok := got[key]; !ok || !strings.Contains(n.Why, why) {
			t.Errorf("%s: notice %+v, want one saying %q", key, n, why)
		}
	}
	for _, secret := range []string{"AKIDSECRETIDVALUE", "topsecretvalue", "AKIDTESTSECRET", "testsecretvalue"} {
		if strings.Contains(all.String(), secret) || strings.Contains(fmt.Sprintf("%+v", c), secret) {
			t.Errorf("a notice or the config's text shows the secret %q:\n%s\n%s", secret, all.String(), fmt.Sprintf("%+v", c))
		}
	}
}

func TestShardingDisabledWinsOverZK(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sequins.conf")
	conf := "source = \"/data\"\n[sharding]\nenabled = false\n[zk]\nservers = [\"zk1:2181\"]\n"
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Parse([]string{"--config", path}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.ClusterMode() || len(c.ZK.Servers) != 0 {
		t.Errorf("explicit sharding.enabled = false: cluster mode %v, zk %v", c.ClusterMode(), c.ZK.Servers)
	}
	// A flag still wins over the file.
	c, err = Parse([]string{"--config", path, "--zk", "zk2:2181"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !c.ClusterMode() || c.ZK.Servers[0] != "zk2:2181" {
		t.Errorf("--zk over enabled = false: cluster mode %v, zk %v", c.ClusterMode(), c.ZK.Servers)
	}
	// Without an explicit false, [zk] servers still turn cluster mode on.
	c = Default()
	if err := Decode("source = \"/data\"\n[zk]\nservers = [\"zk1:2181\"]\n", &c); err != nil || !c.ClusterMode() {
		t.Errorf("[zk] servers alone: cluster mode %v, %v", c.ClusterMode(), err)
	}
}

func TestUnknownKeysStillStopTheStart(t *testing.T) {
	for in, key := range map[string]string{
		"source = \"/x\"\nthrottle_load = \"1s\"":         "throttle_load",
		"source = \"/x\"\n[metrics]\n":                    "metrics",
		"source = \"/x\"\n[datadog]\nuri = \"x\"":         "datadog.uri",
		"source = \"/x\"\n[s3]\nsecret_key = \"hush123\"": "s3.secret_key",
	} {
		c := Default()
		err := Decode(in, &c)
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%q: %v, want an error naming %s", in, err, key)
		}
		if err != nil && strings.Contains(err.Error(), "hush123") {
			t.Errorf("the error shows a value: %v", err)
		}
	}
	c := Default()
	if err := Decode("source = \"/x\"\nroot = \"/y\"", &c); err == nil || !strings.Contains(err.Error(), "keep source") {
		t.Errorf("root and source both set: %v", err)
	}
}

func TestDebugBind(t *testing.T) {
	for _, tc := range []struct {
		bind, debug string
		ok          bool
	}{
		{"0.0.0.0:9599", "127.0.0.1:6060", true},
		{"0.0.0.0:9599", "127.0.0.1:9599", false},
		{"127.0.0.1:9599", "127.0.0.1:9599", false},
		{"127.0.0.1:9599", ":9599", false},
		{"10.0.0.1:9599", "127.0.0.1:9599", true},
		{"0.0.0.0:9599", "nope", false},
	} {
		c := Default()
		c.Source, c.Bind, c.Debug.Bind = "/x", tc.bind, tc.debug
		err := c.Validate()
		if (err == nil) != tc.ok || (err != nil && !strings.Contains(err.Error(), "debug.bind")) {
			t.Errorf("bind %s, debug.bind %s: %v", tc.bind, tc.debug, err)
		}
	}
	if d := Default().Debug; d.Bind != "" || !d.Pprof || !d.Expvars {
		t.Errorf("default [debug] %+v: want no listener, pprof and expvars when bound", d)
	}
}
