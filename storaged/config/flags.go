package config

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// Parse reads the command line: --config loads a TOML file over the
// defaults, then the other flags override it. It validates the result.
func Parse(args []string, out io.Writer) (Config, error) {
	fs := flag.NewFlagSet("storaged", flag.ContinueOnError)
	fs.SetOutput(out)
	path := fs.String("config", "", "TOML config file (sequins' keys)")
	source := fs.String("source", "", "source root: a path or file:// URI (source)")
	store := fs.String("local-store", "", "directory for loaded versions (local_store)")
	bind := fs.String("bind", "", "HTTP listen address (bind)")
	zk := fs.String("zk", "", "comma-separated ZooKeeper servers (zk.servers); enables cluster mode")
	cluster := fs.String("cluster", "", "cluster name (sharding.cluster_name)")
	shard := fs.String("shard-id", "", "shard id (sharding.shard_id)")
	advertise := fs.String("advertise", "", "advertised host:port (sharding.advertised_hostname)")
	inflight := fs.Int("max-inflight", -1, "shed lookups above this many at once (max_inflight)")
	delay := fs.Duration("test-delay", -1, "delay every lookup; tests only (test_delay)")
	refresh := fs.Duration("refresh-period", -1, "re-scan the source this often (refresh_period)")
	retention := fs.Duration("version-retention", -1, "keep replaced versions this long after last use (version_retention)")
	logLevel := fs.String("log-level", "", "debug, info, warn or error (log_level)")
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	if fs.NArg() > 0 {
		return Config{}, fmt.Errorf("config: unexpected arguments %q", fs.Args())
	}
	c := Default()
	if *path != "" {
		b, err := os.ReadFile(*path)
		if err != nil {
			return Config{}, fmt.Errorf("config: %w", err)
		}
		if err := Decode(string(b), &c); err != nil {
			return Config{}, fmt.Errorf("%w (in %s)", err, *path)
		}
	}
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&c.Source, *source)
	set(&c.LocalStore, *store)
	set(&c.Bind, *bind)
	set(&c.Sharding.ClusterName, *cluster)
	set(&c.Sharding.ShardID, *shard)
	set(&c.Sharding.AdvertisedHostname, *advertise)
	set(&c.LogLevel, *logLevel)
	if *zk != "" {
		c.ZK.Servers = strings.Split(*zk, ",")
		c.Sharding.Enabled = true
	}
	if *inflight >= 0 {
		c.MaxInflight = *inflight
	}
	if *delay >= 0 {
		c.TestDelay = *delay
	}
	if *refresh >= 0 {
		c.RefreshPeriod = *refresh
	}
	if *retention >= 0 {
		c.VersionRetention = *retention
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}
