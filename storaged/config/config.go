package config

import (
	"errors"
	"fmt"
	"mime"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"spangle/shared/debugserver"
	"spangle/shared/placement"
	"spangle/shared/tlsconfig"
	"spangle/shared/topo"
	"spangle/shared/topo/zktopo"
	"spangle/shared/wire"
	"spangle/storaged/coordinator"
	"spangle/storaged/versions"
)

// Defaults.
const (
	DefaultBind           = "0.0.0.0:9599"
	DefaultLocalStore     = "/var/lib/spangle/storaged"
	DefaultSettleTime     = 5 * time.Second
	DefaultTimeToConverge = 10 * time.Second
	DefaultClusterName    = "spangle"
	// DefaultBlockCacheSize is none: lookups read their blocks in place
	// from the mapped table files, through the page cache, whose pages
	// the kernel can take back (bench/README.md "Memory and the garbage
	// collector" has the measurements).
	DefaultBlockCacheSize = 0
	DefaultBlockSize      = 4 << 10 // lookups missing the block cache read less
	DefaultBloomBits      = 10
	// DefaultSpillSize and DefaultGCHeadroom keep a 1M-key load of files
	// not in key order under 64 MB of RSS (issue 31): the buffer is live
	// and the headroom is what the heap may grow past it.
	DefaultSpillSize  = 8 << 20
	DefaultGCHeadroom = 8 << 20
	// DefaultScrubRate (MB/s) reads a reused local store back in minutes
	// per 10 GB while leaving most of a disk to lookups and loads.
	DefaultScrubRate = 50
)

// Config is everything storaged is told.
type Config struct {
	// Source is the source root: a path, a file:// URI or
	// s3://bucket/prefix (see S3).
	Source string `toml:"source"`
	// Bind is the HTTP listen address.
	Bind string `toml:"bind"`
	// LocalStore is where loaded versions are kept.
	LocalStore string `toml:"local_store"`
	// RefreshPeriod re-scans the source that often; 0 only at start and
	// on SIGHUP.
	RefreshPeriod time.Duration `toml:"refresh_period"`
	// RequireSuccessFile makes a version count only with _SUCCESS.
	RequireSuccessFile bool `toml:"require_success_file"`
	// SettleTime is how long a version's file list, sizes and times
	// must stay unchanged, as this node observed them from when it first
	// saw them, before it is loaded (SETTLING meanwhile); a version with
	// _SUCCESS, or one the local store holds complete, does not wait.
	// A version being copied in is not loaded half-written, whatever
	// times the copy keeps. 0 loads a version as soon as it is seen;
	// default 5s.
	SettleTime time.Duration `toml:"settle_time"`
	// ContentType of values; default application/octet-stream.
	ContentType string `toml:"content_type"`
	// MaxParallelLoads bounds the source files read at once; 0 means
	// one per CPU.
	MaxParallelLoads int `toml:"max_parallel_loads"`
	// VersionRetention is how long a replaced version keeps answering
	// pinned requests after its last use.
	VersionRetention time.Duration `toml:"version_retention"`
	// MaxInflight sheds load above that many lookups at once (503 with
	// Retry-After); 0 means no limit.
	MaxInflight int `toml:"max_inflight"`
	// BatchMaxKeys and BatchMaxBytes bound a batch lookup (POST /<db>):
	// 413 above them.
	BatchMaxKeys  int   `toml:"batch_max_keys"`
	BatchMaxBytes int64 `toml:"batch_max_bytes"`
	// BatchReadTimeout bounds how long a batch body may take to arrive
	// (408 after it); BatchReadBytes bounds the bytes of batch bodies the
	// node holds at once (503 with Retry-After beyond it). Together they
	// keep slow or stalled clients from holding memory and lookups.
	BatchReadTimeout time.Duration `toml:"batch_read_timeout"`
	BatchReadBytes   int64         `toml:"batch_read_bytes"`
	// TestDelay delays every lookup (tests and benchmarks only).
	TestDelay time.Duration `toml:"test_delay"`
	// LogLevel is zap's level name.
	LogLevel string `toml:"log_level"`
	// LogFormat is "json" (default: one object a line, for collectors)
	// or "console" (for people reading a terminal).
	LogFormat string `toml:"log_format"`
	// GCHeadroom is how many bytes the Go heap may grow past its live
	// size before the garbage collector runs (never less than GOGC=100
	// allows; see package gcpace); 0 leaves Go's default. Ignored when the
	// GOGC environment variable is set.
	GCHeadroom int64 `toml:"gc_headroom"`
	// ScrubRate bounds, in MB/s (10^6 bytes) over the node, how fast the
	// versions reused from the local store after a restart are read back
	// and their checksums checked in the background; 0 turns it off.
	ScrubRate float64 `toml:"scrub_rate"`

	Sharding Sharding             `toml:"sharding"`
	ZK       zktopo.Settings      `toml:"zk"`
	LevelDB  LevelDB              `toml:"leveldb"`
	S3       S3                   `toml:"s3"`
	Debug    debugserver.Settings `toml:"debug"`
	// TLS is the [tls] section: the lookup port (lookups, status,
	// metrics, peer endpoints) serves TLS and peers are asked over TLS
	// when it is set; plaintext by default.
	TLS tlsconfig.Settings `toml:"tls"`

	// Notices are the keys of the file read otherwise than their names
	// say (sequins keys mapped or ignored); the daemon logs them.
	Notices []Notice `toml:"-"`
}

// S3 is the [s3] section, for source = "s3://bucket/prefix".
// Credentials and, by default, the region and endpoint come from the
// standard AWS chain (environment, shared config and credentials files,
// web identity, instance role), so that storaged runs like any AWS tool.
type S3 struct {
	// Endpoint is an S3-compatible store's URL; default
	// AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL, else AWS's own.
	Endpoint string `toml:"endpoint"`
	// PathStyle forces path-style (true) or virtual-hosted (false)
	// addressing; unset means path-style whenever an endpoint is set.
	PathStyle *bool `toml:"path_style"`
	// Region overrides the chain's region (default us-east-1 when the
	// chain names none).
	Region string `toml:"region"`
}

// Sharding is cluster mode's section, with sequins' key names. Cluster
// mode is on when enabled is true or ZooKeeper servers are configured.
type Sharding struct {
	// Enabled turns cluster mode on (zk.servers is then required);
	// configuring zk.servers or --zk does so too.
	Enabled bool `toml:"enabled"`
	// Replication is how many copies of each partition the ring deals
	// over the shard ids; default 2.
	Replication int `toml:"replication"`
	// MinReplication is how many live replicas every partition needs in
	// ZooKeeper before the version is served to clients; default 1.
	MinReplication int `toml:"min_replication"`
	// MaxReplication makes a node skip a partition the ring gives it when
	// that many live replicas are already registered; 0 means no limit.
	MaxReplication int `toml:"max_replication"`
	// TimeToConverge is how long the node list must stay unchanged before
	// a node decides which partitions it holds; default 10s.
	TimeToConverge time.Duration `toml:"time_to_converge"`
	// ClusterName is the cluster's znode under zk.prefix; nodes with the
	// same name form one cluster. Default "spangle".
	ClusterName string `toml:"cluster_name"`
	// AdvertisedHostname is the host:port (or host; the bind port is
	// added) that peers and routers dial; default the bind address, with
	// the hostname for a wildcard host.
	AdvertisedHostname string `toml:"advertised_hostname"`
	// ShardID decides which partitions the node holds; nodes sharing one
	// hold the same partitions. Default the advertised address.
	ShardID string `toml:"shard_id"`
	// Assignment is the placement strategy of the cluster's leader:
	// "sequins" (default; the ring of docs/design.md) or "rendezvous"
	// (bounded-load highest-random-weight, which also rebalances onto a
	// node that joins, moving only its share).
	Assignment string `toml:"assignment"`
	// RereplicateAfter is how long a node must have been gone before the
	// leader gives its copies to other nodes; default 5m, 0 turns
	// re-replication off.
	RereplicateAfter time.Duration `toml:"rereplicate_after"`
	// PruneAfter is how long a version older than a complete one must
	// have had no live replica before the leader deletes its ZooKeeper
	// entries (partitions/<db>/<version> and its assignment), which
	// would otherwise pile up with every version ever built; default 5m,
	// 0 turns pruning off. It must outlast a node's session timeout and
	// what it takes to publish again.
	PruneAfter time.Duration `toml:"prune_after"`
	// ElectQuorum is how many nodes must answer ELECT agreeing with the
	// leader on its ring version before it commits an assignment: "all"
	// (default) or "majority".
	ElectQuorum string `toml:"elect_quorum"`
}

// ClusterMode reports whether storaged joins a cluster through ZooKeeper.
func (c *Config) ClusterMode() bool {
	return c.Sharding.Enabled || len(c.ZK.Servers) > 0
}

// LevelDB bounds the memory and shapes the files of partitions.
type LevelDB struct {
	// BlockCacheSize bounds the node's block cache in bytes: one cache for
	// every partition held, so memory does not grow with their number.
	// 0 turns it off (the page cache still serves the files).
	BlockCacheSize int `toml:"block_cache_size"`
	// BlockSize is the data block size of written tables.
	BlockSize int `toml:"block_size"`
	// BloomBitsPerKey sizes bloom filters; 0 turns them off. A node
	// without a block cache that writes plain blocks writes none either:
	// its lookups search mapped blocks in place and never read them.
	BloomBitsPerKey int `toml:"bloom_bits_per_key"`
	// Compression of blocks: "none" or "snappy".
	Compression string `toml:"compression"`
	// SpillSize is how many bytes of records a load buffers before
	// writing them sorted to spill files, merged into one table per
	// partition at the end (for files that are not pre-sharded).
	SpillSize int64 `toml:"spill_size"`
	// NoSync skips fsync of loaded files (faster; a crash may then leave
	// a version that must be reloaded by hand).
	NoSync bool `toml:"no_sync"`
}

// Default returns the configuration with every default filled in.
func Default() Config {
	return Config{
		Bind:             DefaultBind,
		LocalStore:       DefaultLocalStore,
		VersionRetention: versions.DefaultRetention,
		SettleTime:       DefaultSettleTime,
		LogLevel:         "info",
		LogFormat:        "json",
		Debug:            debugserver.DefaultSettings(),
		GCHeadroom:       DefaultGCHeadroom,
		ScrubRate:        DefaultScrubRate,
		BatchMaxKeys:     wire.DefaultBatchMaxKeys,
		BatchMaxBytes:    wire.DefaultBatchMaxBytes,
		BatchReadTimeout: wire.DefaultBatchReadTimeout,
		BatchReadBytes:   wire.DefaultBatchReadBytes,
		Sharding: Sharding{
			Replication: placement.DefaultReplication, MinReplication: 1,
			TimeToConverge: DefaultTimeToConverge, ClusterName: DefaultClusterName,
			Assignment: "sequins", RereplicateAfter: coordinator.DefaultRereplicateAfter, PruneAfter: coordinator.DefaultPruneAfter,
			ElectQuorum: "all",
		},
		ZK: zktopo.DefaultSettings(),
		LevelDB: LevelDB{
			BlockCacheSize: DefaultBlockCacheSize, BlockSize: DefaultBlockSize,
			BloomBitsPerKey: DefaultBloomBits, Compression: "none", SpillSize: DefaultSpillSize,
		},
	}
}

// Decode reads TOML into c, over what c already holds. A key of
// sequins' that storaged reads under another name, or ignores, adds a
// Notice (sequins.go); any other unknown key is an error naming it.
func Decode(data string, c *Config) error {
	md, err := toml.Decode(data, c)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return sequinsKeysIn(data, md, md.Undecoded(), c)
}

func errKey(key, format string, args ...any) error {
	return fmt.Errorf("config: %s: %s", key, fmt.Sprintf(format, args...))
}

// Validate checks every value and returns the first bad one, named.
func (c *Config) Validate() error {
	var errs []error
	check := func(bad bool, key, format string, args ...any) {
		if bad {
			errs = append(errs, errKey(key, format, args...))
		}
	}
	check(c.Source == "", "source", "required (a path, file:// URI or s3://bucket/prefix)")
	if c.S3.Endpoint != "" {
		u, err := url.Parse(c.S3.Endpoint)
		check(err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "", "s3.endpoint", "%q is not an http:// or https:// URL", c.S3.Endpoint)
	}
	if _, _, err := net.SplitHostPort(c.Bind); err != nil {
		errs = append(errs, errKey("bind", "%q is not host:port", c.Bind))
	}
	check(c.LocalStore == "", "local_store", "required")
	check(c.RefreshPeriod < 0, "refresh_period", "must not be negative")
	check(c.SettleTime < 0, "settle_time", "must not be negative (0 loads versions as soon as they are seen)")
	if c.ContentType != "" {
		if _, _, err := mime.ParseMediaType(c.ContentType); err != nil {
			errs = append(errs, errKey("content_type", "%q: %v", c.ContentType, err))
		}
	}
	check(c.MaxParallelLoads < 0, "max_parallel_loads", "must not be negative")
	check(c.VersionRetention <= 0, "version_retention", "must be positive")
	check(c.MaxInflight < 0, "max_inflight", "must not be negative")
	check(c.BatchMaxKeys < 1, "batch_max_keys", "must be at least 1")
	check(c.BatchMaxBytes < 1, "batch_max_bytes", "must be at least 1")
	check(c.BatchReadTimeout <= 0, "batch_read_timeout", "must be positive")
	check(c.BatchReadBytes/2 < c.BatchMaxBytes, "batch_read_bytes", "must be at least twice batch_max_bytes")
	check(c.TestDelay < 0, "test_delay", "must not be negative")
	check(c.GCHeadroom < 0, "gc_headroom", "must not be negative (0 leaves Go's default)")
	check(!(c.ScrubRate >= 0), "scrub_rate", "must not be negative (0 turns the scrub off)")
	check(c.LogFormat != "json" && c.LogFormat != "console", "log_format", "%q is not json or console", c.LogFormat)
	if c.Debug.Bind != "" {
		if err := debugserver.CheckBind(c.Debug.Bind, c.Bind); err != nil {
			errs = append(errs, errKey("debug.bind", "%v", err))
		}
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, errKey("log_level", "%q is not one of debug, info, warn, error", c.LogLevel))
	}
	s := c.Sharding
	check(s.Replication < 1, "sharding.replication", "must be at least 1")
	check(s.MinReplication < 1 || s.MinReplication > s.Replication, "sharding.min_replication", "must be between 1 and replication (%d)", s.Replication)
	check(s.MaxReplication != 0 && s.MaxReplication < s.Replication, "sharding.max_replication", "must be 0 (no limit) or at least replication (%d)", s.Replication)
	check(s.TimeToConverge < 0, "sharding.time_to_converge", "must not be negative")
	check(s.Assignment != "sequins" && s.Assignment != "rendezvous", "sharding.assignment", "%q is not sequins or rendezvous", s.Assignment)
	check(s.RereplicateAfter < 0, "sharding.rereplicate_after", "must not be negative (0 turns re-replication off)")
	check(s.PruneAfter < 0, "sharding.prune_after", "must not be negative (0 turns pruning off)")
	check(s.ElectQuorum != "all" && s.ElectQuorum != "majority", "sharding.elect_quorum", "%q is not all or majority", s.ElectQuorum)
	check(s.ClusterName == "" || strings.Contains(s.ClusterName, "/"), "sharding.cluster_name", "must be non-empty without '/'")
	if s.ShardID != "" {
		if err := topo.CheckShardID(s.ShardID); err != nil {
			errs = append(errs, errKey("sharding.shard_id", "%v", err))
		}
	}
	check(strings.ContainsAny(s.AdvertisedHostname, "/@"), "sharding.advertised_hostname", "must be a host or host:port")
	check(s.Enabled && len(c.ZK.Servers) == 0, "zk.servers", "required when sharding is enabled")
	if err := c.ZK.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.TLS.Validate(true); err != nil {
		errs = append(errs, err)
	}
	l := c.LevelDB
	check(l.BlockCacheSize < 0, "leveldb.block_cache_size", "must not be negative")
	check(l.BlockSize < 0 || l.BlockSize > 64<<20, "leveldb.block_size", "must be between 0 and 64 MiB")
	check(l.BloomBitsPerKey < 0 || l.BloomBitsPerKey > 64, "leveldb.bloom_bits_per_key", "must be between 0 and 64")
	check(l.Compression != "none" && l.Compression != "snappy", "leveldb.compression", "%q is not none or snappy", l.Compression)
	check(l.SpillSize < 0, "leveldb.spill_size", "must not be negative")
	return errors.Join(errs...)
}
