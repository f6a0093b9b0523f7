package config

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"spangle/shared/cliflags"
)

// zkFlag is --zk: a server list that turns cluster mode on.
type zkFlag struct{ c *Config }

func (z zkFlag) String() string {
	if z.c == nil {
		return ""
	}
	return strings.Join(z.c.ZK.Servers, ",")
}

func (z zkFlag) Set(s string) error {
	z.c.ZK.Servers = cliflags.SplitList(s)
	z.c.Sharding.Enabled = len(z.c.ZK.Servers) > 0
	return nil
}

// bind registers every flag on fs, writing into c; each flag's default
// is c's value, so that the usage text shows the real defaults.
func bind(fs *flag.FlagSet, c *Config) {
	fs.StringVar(&c.Source, "source", c.Source, "source root, required: a path, file:// URI or s3://bucket/prefix (source)")
	fs.StringVar(&c.LocalStore, "local-store", c.LocalStore, "directory for loaded versions (local_store)")
	fs.StringVar(&c.Bind, "bind", c.Bind, "HTTP listen address (bind)")
	fs.StringVar(&c.Debug.Bind, "debug-bind", c.Debug.Bind, "serve /debug/pprof/ and /debug/vars on this address; never the lookup address (debug.bind)")
	fs.Var(zkFlag{c}, "zk", "comma-separated ZooKeeper host:port list; enables cluster mode (zk.servers)")
	fs.StringVar(&c.Sharding.ClusterName, "cluster", c.Sharding.ClusterName, "cluster name: the znode under /<zk.prefix> shared by the cluster's nodes (sharding.cluster_name)")
	fs.StringVar(&c.Sharding.ShardID, "shard-id", c.Sharding.ShardID, "shard id; nodes sharing one hold the same partitions; default the advertised address (sharding.shard_id)")
	fs.StringVar(&c.Sharding.AdvertisedHostname, "advertise", c.Sharding.AdvertisedHostname, "host:port that routers and peers dial; default the bind address (sharding.advertised_hostname)")
	fs.IntVar(&c.Sharding.Replication, "replication", c.Sharding.Replication, "copies of each partition dealt over the shard ids (sharding.replication)")
	fs.IntVar(&c.Sharding.MinReplication, "min-replication", c.Sharding.MinReplication, "live replicas every partition needs before a version is served (sharding.min_replication)")
	fs.IntVar(&c.Sharding.MaxReplication, "max-replication", c.Sharding.MaxReplication, "skip a partition already this many times live; 0 no limit (sharding.max_replication)")
	fs.DurationVar(&c.Sharding.TimeToConverge, "time-to-converge", c.Sharding.TimeToConverge, "how long the node list must be stable before partitions are decided (sharding.time_to_converge)")
	c.ZK.BindFlags(fs, "which the znodes this node creates are guarded by")
	fs.StringVar(&c.ZK.ACLRead, "zk-acl-read", c.ZK.ACLRead, "who may read the znodes created with a credential: world or auth (zk.acl_read)")
	fs.IntVar(&c.MaxInflight, "max-inflight", c.MaxInflight, "shed lookups above this many at once; 0 no limit (max_inflight)")
	fs.IntVar(&c.BatchMaxKeys, "batch-max-keys", c.BatchMaxKeys, "most keys in a batch lookup, 413 above (batch_max_keys)")
	fs.Int64Var(&c.BatchMaxBytes, "batch-max-bytes", c.BatchMaxBytes, "largest batch lookup body in bytes, 413 above (batch_max_bytes)")
	fs.DurationVar(&c.TestDelay, "test-delay", c.TestDelay, "delay every lookup; tests only (test_delay)")
	fs.DurationVar(&c.RefreshPeriod, "refresh-period", c.RefreshPeriod, "re-scan the source this often; 0 only at start and on SIGHUP (refresh_period)")
	fs.DurationVar(&c.SettleTime, "settle-time", c.SettleTime, "load a version only once its files have not changed for this long, unless it holds _SUCCESS; 0 at once (settle_time)")
	fs.DurationVar(&c.VersionRetention, "version-retention", c.VersionRetention, "keep replaced versions this long after last use (version_retention)")
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "debug, info, warn or error (log_level)")
	fs.StringVar(&c.LogFormat, "log-format", c.LogFormat, "json, or console for a terminal (log_format)")
}

// Parse reads the command line: --config loads a TOML file over the
// defaults, then the flags given override it. It validates the result.
// --help gives flag.ErrHelp, --version cliflags.ErrVersion.
func Parse(args []string, out io.Writer) (Config, error) {
	c := Default()
	err := cliflags.Parse(args, out, cliflags.Command{
		Name:   "storaged",
		Usage:  "Usage: storaged [flags]; every flag has a key of the --config file (sequins' keys), named in parentheses (docs/configuration.md).",
		Hidden: []string{"test-delay"}, // tests only
		Bind:   func(fs *flag.FlagSet) { bind(fs, &c) },
		Check:  negativeDurations,
		Load: func(path string) error {
			c = Default()
			b, err := os.ReadFile(path)
			if err != nil {
				return fmt.Errorf("config: %w", err)
			}
			if err := Decode(string(b), &c); err != nil {
				return fmt.Errorf("%w (in %s)", err, path)
			}
			return nil
		},
	})
	if err != nil {
		return Config{}, err
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// negativeDurations names a duration flag given a negative value, as
// Validate would name its key, so that the message names what was typed.
func negativeDurations(fs *flag.FlagSet) error {
	var err error
	fs.Visit(func(f *flag.Flag) {
		g, ok := f.Value.(flag.Getter)
		if !ok {
			return
		}
		if d, ok := g.Get().(time.Duration); ok && d < 0 && err == nil {
			err = fmt.Errorf("config: --%s: must not be negative (got %v)", f.Name, d)
		}
	})
	return err
}
