package config

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// Parse reads the command line: --config loads a TOML file over the
// defaults, then the other flags override it. It validates the result.
func Parse(args []string, out io.Writer) (Config, error) {
	fs := flag.NewFlagSet("storaged", flag.ContinueOnError)
	fs.SetOutput(out)
	path := fs.String("config", "", "TOML config file (sequins' keys)")
	source := fs.String("source", "", "source root: a path, file:// URI or s3://bucket/prefix (source)")
	store := fs.String("local-store", "", "directory for loaded versions (local_store)")
	bind := fs.String("bind", "", "HTTP listen address (bind)")
	zk := fs.String("zk", "", "comma-separated ZooKeeper host:port list (zk.servers); enables cluster mode")
	cluster := fs.String("cluster", "", "cluster name: the znode under /<zk.prefix> shared by the cluster's nodes (sharding.cluster_name)")
	shard := fs.String("shard-id", "", "shard id; nodes sharing one hold the same partitions; default the advertised address (sharding.shard_id)")
	advertise := fs.String("advertise", "", "host:port that routers and peers dial; default the bind address (sharding.advertised_hostname)")
	replication := fs.Int("replication", 0, "copies of each partition dealt over the shard ids (sharding.replication)")
	minRepl := fs.Int("min-replication", 0, "live replicas every partition needs before a version is served (sharding.min_replication)")
	maxRepl := fs.Int("max-replication", -1, "skip a partition already this many times live; 0 no limit (sharding.max_replication)")
	converge := fs.Duration("time-to-converge", -1, "how long the node list must be stable before partitions are decided (sharding.time_to_converge)")
	zkSession := fs.Duration("zk-session-timeout", 0, "ZooKeeper session timeout: how soon a dead node's znodes go (zk.session_timeout)")
	zkConnect := fs.Duration("zk-connect-timeout", 0, "timeout of each attempt to reach a ZooKeeper server (zk.connect_timeout)")
	zkPrefix := fs.String("zk-prefix", "", "first element of every znode path (zk.prefix)")
	inflight := fs.Int("max-inflight", -1, "shed lookups above this many at once (max_inflight)")
	batchKeys := fs.Int("batch-max-keys", 0, "most keys in a batch lookup, 413 above (batch_max_keys)")
	batchBytes := fs.Int64("batch-max-bytes", 0, "largest batch lookup body in bytes, 413 above (batch_max_bytes)")
	delay := fs.Duration("test-delay", -1, "delay every lookup; tests only (test_delay)")
	refresh := fs.Duration("refresh-period", -1, "re-scan the source this often (refresh_period)")
	settle := fs.Duration("settle-time", -1, "load a version only once its files have not changed for this long, unless it holds _SUCCESS; 0 at once (settle_time)")
	retention := fs.Duration("version-retention", -1, "keep replaced versions this long after last use (version_retention)")
	logLevel := fs.String("log-level", "", "debug, info, warn or error (log_level)")
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	if fs.NArg() > 0 {
		return Config{}, fmt.Errorf("config: unexpected arguments %q", fs.Args())
	}
	if err := negativeDurations(fs); err != nil {
		return Config{}, err
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
	set(&c.ZK.Prefix, *zkPrefix)
	if *zk != "" {
		c.ZK.Servers = strings.Split(*zk, ",")
		c.Sharding.Enabled = true
	}
	if *replication > 0 {
		c.Sharding.Replication = *replication
	}
	if *minRepl > 0 {
		c.Sharding.MinReplication = *minRepl
	}
	if *maxRepl >= 0 {
		c.Sharding.MaxReplication = *maxRepl
	}
	if *converge >= 0 {
		c.Sharding.TimeToConverge = *converge
	}
	if *zkSession > 0 {
		c.ZK.SessionTimeout = *zkSession
	}
	if *zkConnect > 0 {
		c.ZK.ConnectTimeout = *zkConnect
	}
	if *inflight >= 0 {
		c.MaxInflight = *inflight
	}
	if *batchKeys > 0 {
		c.BatchMaxKeys = *batchKeys
	}
	if *batchBytes > 0 {
		c.BatchMaxBytes = *batchBytes
	}
	if *delay >= 0 {
		c.TestDelay = *delay
	}
	if *refresh >= 0 {
		c.RefreshPeriod = *refresh
	}
	if *settle >= 0 {
		c.SettleTime = *settle
	}
	if *retention >= 0 {
		c.VersionRetention = *retention
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// negativeDurations rejects a duration flag given a negative value, as
// Decode rejects one in TOML: the defaults below use negative values to
// mean "not given", so a negative value given would be silently ignored.
func negativeDurations(fs *flag.FlagSet) error {
	var err error
	fs.Visit(func(f *flag.Flag) {
		if d, ok := f.Value.(flag.Getter).Get().(time.Duration); ok && d < 0 && err == nil {
			err = fmt.Errorf("config: --%s: must not be negative (got %v)", f.Name, d)
		}
	})
	return err
}
