package config

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestDecodeSequinsKeys(t *testing.T) {
	c := Default()
	err := Decode(`
source = "file:///data"
bind = "127.0.0.1:9600"
local_store = "/tmp/x"
refresh_period = "30s"
require_success_file = true
content_type = "text/plain"
max_parallel_loads = 3
version_retention = "1m"
max_inflight = 100
gc_headroom = 33554432
scrub_rate = 2.5
settle_time = "2s"

[sharding]
enabled = true
replication = 3
min_replication = 2
max_replication = 4
time_to_converge = "5s"
cluster_name = "prod"
advertised_hostname = "host1:9600"
shard_id = "a"

[zk]
servers = ["zk1:2181", "zk2:2181"]
connect_timeout = "2s"
session_timeout = "20s"
prefix = "spangle"

[leveldb]
block_cache_size = 1048576
compression = "snappy"
`, &c)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.RefreshPeriod != 30*time.Second || !c.RequireSuccessFile || c.Sharding.Replication != 3 ||
		len(c.ZK.Servers) != 2 || c.LevelDB.Compression != "snappy" || c.VersionRetention != time.Minute ||
		c.GCHeadroom != 32<<20 || c.ScrubRate != 2.5 || c.SettleTime != 2*time.Second {
		t.Fatalf("decoded %+v", c)
	}
}

func TestBadConfigNamesTheKey(t *testing.T) {
	cases := map[string]string{
		`source = "/x"` + "\nbogus = 1":                        "bogus",
		`source = "/x"` + "\n[sharding]\nreplicas = 2":         "sharding.replicas",
		`source = "/x"` + "\nversion_retention = \"soon\"":     "version_retention",
		`source = "/x"` + "\nversion_retention = \"-1s\"":      "version_retention",
		`source = "/x"` + "\nbind = \"nope\"":                  "bind",
		`source = "/x"` + "\n[sharding]\nmin_replication = 5":  "sharding.min_replication",
		`source = "/x"` + "\n[sharding]\nenabled = true":       "zk.servers",
		`source = "/x"` + "\n[leveldb]\ncompression = \"lz4\"": "leveldb.compression",
		`source = "/x"` + "\nmax_inflight = -2":                "max_inflight",
		`source = "/x"` + "\ngc_headroom = -1":                 "gc_headroom",
		`source = "/x"` + "\nscrub_rate = -1":                  "scrub_rate",
		`source = "/x"` + "\nsettle_time = \"-1s\"":            "settle_time",
		`source = "/x"` + "\nbatch_max_keys = 0":               "batch_max_keys",
		`source = "/x"` + "\nbatch_max_bytes = -5":             "batch_max_bytes",
		`source = "/x"` + "\nbatch_read_timeout = \"0s\"":      "batch_read_timeout",
		`source = "/x"` + "\nbatch_read_bytes = 1048576":       "batch_read_bytes",
		`bind = "127.0.0.1:1"`:                                 "source",
		`source = "/x"` + "\n[zk]\nacl_read = \"everyone\"":    "zk.acl_read",
	}
	for in, key := range cases {
		c := Default()
		err := Decode(in, &c)
		if err == nil {
			err = c.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%q: error %v should name %s", in, err, key)
		}
	}
}

func TestFlagsOverrideFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "storaged.toml")
	os.WriteFile(path, []byte("source = \"/a\"\nbind = \"127.0.0.1:1\"\nmax_inflight = 5\n"), 0o644)
	c, err := Parse([]string{"--config", path, "--source", "/b", "--local-store", "/s", "--test-delay", "300ms"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Source != "/b" || c.Bind != "127.0.0.1:1" || c.LocalStore != "/s" || c.MaxInflight != 5 || c.TestDelay != 300*time.Millisecond {
		t.Fatalf("parsed %+v", c)
	}
	if c.SettleTime != DefaultSettleTime {
		t.Fatalf("settle time %v, want the default %v", c.SettleTime, DefaultSettleTime)
	}
	if c, err := Parse([]string{"--source", "/a", "--settle-time", "0"}, io.Discard); err != nil || c.SettleTime != 0 {
		t.Fatalf("--settle-time 0: %v, %v", c.SettleTime, err)
	}
	if _, err := Parse([]string{"--bind", "x"}, io.Discard); err == nil {
		t.Fatal("missing source accepted")
	}
	if _, err := Parse([]string{"--source", "/a", "--nope"}, io.Discard); err == nil {
		t.Fatal("unknown flag accepted")
	}
}

// TestNegativeDurationFlags: every duration flag given a negative value
// is refused with its name, as TOML refuses one, rather than ignored;
// zero stays accepted.
func TestNegativeDurationFlags(t *testing.T) {
	for _, f := range []string{"time-to-converge", "zk-session-timeout", "zk-connect-timeout", "test-delay", "refresh-period", "version-retention"} {
		_, err := Parse([]string{"--source", "/a", "--" + f + "=-2s"}, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "--"+f) {
			t.Errorf("--%s=-2s: err %v, want one naming the flag", f, err)
		}
	}
	if c, err := Parse([]string{"--source", "/a", "--refresh-period=0s"}, io.Discard); err != nil || c.RefreshPeriod != 0 {
		t.Errorf("--refresh-period=0s: %v, %v", c.RefreshPeriod, err)
	}
}

func TestClusterMode(t *testing.T) {
	c := Default()
	c.Source = "/a"
	if c.ClusterMode() {
		t.Fatal("default config is in cluster mode")
	}
	if err := Decode("[zk]\nservers = [\"127.0.0.1:2181\"]\n", &c); err != nil {
		t.Fatal(err)
	}
	if !c.ClusterMode() {
		t.Fatal("[zk] servers alone should turn cluster mode on")
	}
	c, err := Parse([]string{"--source", "/a", "--zk", "zk:2181", "--cluster", "prod", "--advertise", "storaged1:9599",
		"--shard-id", "s1", "--replication", "3", "--min-replication", "2", "--max-replication", "3",
		"--time-to-converge", "2s", "--zk-session-timeout", "4s", "--zk-connect-timeout", "500ms", "--zk-prefix", "sp"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	s := c.Sharding
	if !c.ClusterMode() || s.ClusterName != "prod" || s.AdvertisedHostname != "storaged1:9599" || s.ShardID != "s1" ||
		s.Replication != 3 || s.MinReplication != 2 || s.MaxReplication != 3 || s.TimeToConverge != 2*time.Second ||
		c.ZK.SessionTimeout != 4*time.Second || c.ZK.ConnectTimeout != 500*time.Millisecond || c.ZK.Servers[0] != "zk:2181" || c.ZK.Prefix != "sp" {
		t.Fatalf("parsed %+v", c)
	}
	if _, err := Parse([]string{"--source", "/a", "--zk", "zk:2181", "--min-replication", "3"}, io.Discard); err == nil {
		t.Fatal("min_replication above replication accepted")
	}
}

// TestZKAuthKeys: [zk] auth_file and acl_read load from the file and the
// flags; the config holds the file's name, never its content.
func TestZKAuthKeys(t *testing.T) {
	c := Default()
	if c.ZK.ACLRead != "world" || c.ZK.AuthFile != "" {
		t.Fatalf("defaults: %+v", c.ZK)
	}
	if err := Decode("source = \"/x\"\n[zk]\nservers = [\"z:2181\"]\nauth_file = \"/etc/spangle/zk-auth\"\nacl_read = \"auth\"\n", &c); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil || c.ZK.AuthFile != "/etc/spangle/zk-auth" || c.ZK.ACLRead != "auth" {
		t.Fatalf("from the file: %+v, %v", c.ZK, err)
	}
	c, err := Parse([]string{"--source", "/a", "--zk", "z:2181", "--zk-auth-file", "/run/secrets/zk", "--zk-acl-read", "auth"}, io.Discard)
	if err != nil || c.ZK.AuthFile != "/run/secrets/zk" || c.ZK.ACLRead != "auth" {
		t.Fatalf("from the flags: %+v, %v", c.ZK, err)
	}
}
