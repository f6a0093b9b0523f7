package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"spangle/shared/cliflags"
	"spangle/shared/debugserver"
	"spangle/shared/placement"
	"spangle/shared/tlsconfig"
	"spangle/shared/topo/zktopo"
	"spangle/shared/wire"
)

// Defaults.
const (
	DefaultBind         = "127.0.0.1:9590"
	DefaultStoraged     = "http://127.0.0.1:9599"
	DefaultZK           = "127.0.0.1:2181"
	DefaultClusterName  = "spangle"
	DefaultProxyTimeout = 100 * time.Millisecond
	// DefaultBatchKeyTimeout and DefaultBatchTimeout: a batch of n keys
	// gets proxy_timeout + n ms, and waits at most 10 s on replicas
	// that keep answering (#31).
	DefaultBatchKeyTimeout = time.Millisecond
	DefaultBatchTimeout    = 10 * time.Second
	DefaultCacheSize       = 64 << 20
	DefaultHedgeBudget     = 0.1
	DefaultPoll            = time.Second
	DefaultGCHeadroom      = 32 << 20
)

// Config is everything routerd is told. The TOML keys are the flag names
// with '_' for '-', except in the [zk] and [sharding] sections, which
// have storaged's names for the same settings (renamed.go lists the
// older keys, still accepted).
type Config struct {
	// Bind is the app-facing HTTP address.
	Bind string `toml:"bind"`
	// Storaged lists storaged base URLs (http://host:port) for static
	// discovery, the standalone default.
	Storaged []string `toml:"storaged"`
	// StoragedPoll is how often static discovery reads each node's
	// status.
	StoragedPoll time.Duration `toml:"storaged_poll"`
	// ProxyTimeout bounds a lookup; ProxyStageTimeout is how long one
	// replica gets before another starts (default ProxyTimeout /
	// Replication, as in sequins).
	ProxyTimeout      time.Duration `toml:"proxy_timeout"`
	ProxyStageTimeout time.Duration `toml:"proxy_stage_timeout"`
	// HedgeBudget is the fraction of lookups that may be hedged over the
	// last few seconds; 0 turns hedging off.
	HedgeBudget float64 `toml:"hedge_budget"`
	// CacheSize bounds the hot-key cache in bytes; 0 turns it off.
	CacheSize int64 `toml:"cache_size"`
	// ContentType of values when storaged sends none.
	ContentType string `toml:"content_type"`
	// BatchMaxKeys and BatchMaxBytes bound a batch lookup (POST /<db>):
	// 413 above them.
	BatchMaxKeys  int   `toml:"batch_max_keys"`
	BatchMaxBytes int64 `toml:"batch_max_bytes"`
	// BatchReadTimeout bounds how long a batch body may take to arrive
	// (408 after it); BatchReadBytes bounds the bytes of batch bodies the
	// router holds at once (503 with Retry-After beyond it). Together they
	// keep slow or stalled clients from holding memory.
	BatchReadTimeout time.Duration `toml:"batch_read_timeout"`
	BatchReadBytes   int64         `toml:"batch_read_bytes"`
	// BatchKeyTimeout is added to ProxyTimeout per key a batch sends
	// upstream: a batch's deadline grows with its size. BatchTimeout is
	// the most a batch waits, past that deadline, on replicas that keep
	// answering other lookups (busy, not down); it bounds the deadline,
	// and counts as ProxyTimeout when shorter.
	BatchKeyTimeout time.Duration `toml:"batch_key_timeout"`
	BatchTimeout    time.Duration `toml:"batch_timeout"`
	// XDSBind, if set, is where the embedded Envoy xDS server listens.
	XDSBind string `toml:"xds_bind"`
	// LogLevel is zap's level name (debug, info, warn, error).
	LogLevel string `toml:"log_level"`
	// LogFormat is "json" (default) or "console" (for a terminal).
	LogFormat string `toml:"log_format"`
	// GCHeadroom is how many bytes the Go heap may grow past its live
	// size before the garbage collector runs (never less than GOGC=100
	// allows; see package gcpace); 0 leaves Go's default. Ignored when the
	// GOGC environment variable is set.
	GCHeadroom int64 `toml:"gc_headroom"`

	Sharding Sharding             `toml:"sharding"`
	ZK       zktopo.Settings      `toml:"zk"`
	Debug    debugserver.Settings `toml:"debug"`
	// TLS is the [tls] section: routerd speaks TLS to storaged (and
	// static discovery's URLs are https://) when it is set; the xDS
	// server serves TLS then too; the app-facing bind only with app_tls.
	TLS tlsconfig.Settings `toml:"tls"`

	// Deprecated lists the older keys the file used and their new names
	// (renamed.go); the daemon logs a warning for each once it has a
	// logger.
	Deprecated []Renamed `toml:"-"`
}

// Sharding is what routerd knows of the cluster's sharding: storaged's
// [sharding] keys of the same meaning.
type Sharding struct {
	// ClusterName is the cluster's znode under zk.prefix; default
	// "spangle" with ZooKeeper discovery. Setting it alone selects
	// ZooKeeper discovery on DefaultZK.
	ClusterName string `toml:"cluster_name"`
	// Replication is the cluster's replication; the stage timeout
	// defaults to ProxyTimeout / Replication, as in sequins.
	Replication int `toml:"replication"`
	// MinReplication is the live replicas per partition a version needs
	// before routerd serves it.
	MinReplication int `toml:"min_replication"`
}

// Default returns the configuration with every default filled in, except
// those derived in Validate.
func Default() Config {
	return Config{
		Bind:             DefaultBind,
		StoragedPoll:     DefaultPoll,
		ProxyTimeout:     DefaultProxyTimeout,
		HedgeBudget:      DefaultHedgeBudget,
		CacheSize:        DefaultCacheSize,
		ContentType:      "application/octet-stream",
		LogLevel:         "info",
		LogFormat:        "json",
		Debug:            debugserver.DefaultSettings(),
		GCHeadroom:       DefaultGCHeadroom,
		Sharding:         Sharding{Replication: placement.DefaultReplication, MinReplication: 1},
		BatchMaxKeys:     wire.DefaultBatchMaxKeys,
		BatchMaxBytes:    wire.DefaultBatchMaxBytes,
		BatchReadTimeout: wire.DefaultBatchReadTimeout,
		BatchReadBytes:   wire.DefaultBatchReadBytes,
		BatchKeyTimeout:  DefaultBatchKeyTimeout,
		BatchTimeout:     DefaultBatchTimeout,
		ZK:               zktopo.DefaultSettings(),
	}
}

// UseZK reports whether discovery goes through ZooKeeper.
func (c *Config) UseZK() bool { return len(c.ZK.Servers) > 0 || c.Sharding.ClusterName != "" }

// Load reads a TOML file over c. Unknown keys are errors, so a typo is
// not silently ignored; older keys (renamed.go) are read as their new
// names, with a warning in c.Deprecated.
func Load(path string, c *Config) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	data, old, err := rename(string(b))
	if err != nil {
		return fmt.Errorf("config: %s: %w", path, err)
	}
	md, err := toml.Decode(data, c)
	if err != nil {
		return fmt.Errorf("config: %s: %w", path, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		return fmt.Errorf("config: %s: unknown keys %v", path, und)
	}
	c.Deprecated = append(c.Deprecated, old...)
	return nil
}

// Validate checks c and derives the defaults that depend on other
// values (the stage timeout, the discovery defaults).
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("config: "+format, args...)) }
	if _, _, err := net.SplitHostPort(c.Bind); err != nil {
		bad("bind %q: %v", c.Bind, err)
	}
	if c.UseZK() {
		if len(c.Storaged) > 0 {
			bad("storaged and zk.servers/sharding.cluster_name are exclusive: pick static or ZooKeeper discovery")
		}
		if c.Sharding.ClusterName == "" {
			c.Sharding.ClusterName = DefaultClusterName
		}
		if len(c.ZK.Servers) == 0 {
			c.ZK.Servers = []string{DefaultZK}
		}
	} else if len(c.Storaged) == 0 {
		c.Storaged = []string{DefaultStoraged}
	}
	if c.TLS.Enabled() && len(c.Storaged) == 1 && c.Storaged[0] == DefaultStoraged {
		c.Storaged = []string{"https" + strings.TrimPrefix(DefaultStoraged, "http")}
	}
	for _, s := range c.Storaged {
		if _, err := storagedAddr(s, c.TLS.Enabled()); err != nil {
			errs = append(errs, err)
		}
	}
	if err := c.TLS.Validate(c.TLS.AppTLS || (c.XDSBind != "" && c.TLS.Enabled())); err != nil {
		errs = append(errs, err)
	}
	if c.ProxyTimeout <= 0 {
		bad("proxy_timeout must be positive")
	}
	if c.Sharding.Replication < 1 {
		bad("sharding.replication must be at least 1")
	}
	if c.ProxyStageTimeout == 0 && c.Sharding.Replication >= 1 {
		c.ProxyStageTimeout = c.ProxyTimeout / time.Duration(c.Sharding.Replication)
	}
	if c.ProxyStageTimeout <= 0 || c.ProxyStageTimeout > c.ProxyTimeout {
		bad("proxy_stage_timeout %v must be positive and at most proxy_timeout %v", c.ProxyStageTimeout, c.ProxyTimeout)
	}
	if c.Sharding.MinReplication < 1 {
		bad("sharding.min_replication must be at least 1")
	}
	if c.HedgeBudget < 0 || c.HedgeBudget > 1 {
		bad("hedge_budget %v must be within [0, 1]", c.HedgeBudget)
	}
	if c.BatchMaxKeys < 1 || c.BatchMaxBytes < 1 {
		bad("batch_max_keys and batch_max_bytes must be at least 1")
	}
	if c.BatchReadTimeout <= 0 {
		bad("batch_read_timeout must be positive")
	}
	if c.BatchKeyTimeout < 0 {
		bad("batch_key_timeout must not be negative")
	}
	if c.BatchTimeout <= 0 {
		bad("batch_timeout must be positive")
	}
	if c.BatchReadBytes/2 < c.BatchMaxBytes {
		bad("batch_read_bytes must be at least twice batch_max_bytes")
	}
	if c.CacheSize < 0 {
		bad("cache_size must not be negative")
	}
	if c.GCHeadroom < 0 {
		bad("gc_headroom must not be negative (0 leaves Go's default)")
	}
	if c.StoragedPoll <= 0 {
		bad("storaged_poll must be positive")
	}
	if err := c.ZK.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.LogFormat != "json" && c.LogFormat != "console" {
		bad("log_format %q is not json or console", c.LogFormat)
	}
	if c.Debug.Bind != "" {
		for _, other := range []string{c.Bind, c.XDSBind} {
			if err := debugserver.CheckBind(c.Debug.Bind, other); err != nil {
				bad("debug.bind: %v", err)
				break
			}
		}
	}
	if c.XDSBind != "" {
		if _, _, err := net.SplitHostPort(c.XDSBind); err != nil {
			bad("xds_bind %q: %v", c.XDSBind, err)
		}
	}
	return errors.Join(errs...)
}

// StoragedAddr checks a --storaged URL (http://host:port, nothing else)
// and returns its host:port.
func StoragedAddr(s string) (string, error) { return storagedAddr(s, false) }

// storagedAddr checks a --storaged URL: https://host:port with TLS on,
// http://host:port otherwise.
func storagedAddr(s string, tls bool) (string, error) {
	scheme := "http"
	if tls {
		scheme = "https"
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme != scheme || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		why := ""
		if u != nil && (u.Scheme == "http" || u.Scheme == "https") {
			why = " ([tls] decides: https with it, http without)"
		}
		return "", fmt.Errorf("config: storaged %q is not %s://host:port%s", s, scheme, why)
	}
	if _, _, err := net.SplitHostPort(u.Host); err != nil {
		return "", fmt.Errorf("config: storaged %q: %w", s, err)
	}
	return u.Host, nil
}

// bind registers every flag on fs, writing into c.
func bind(fs *flag.FlagSet, c *Config) {
	fs.StringVar(&c.Debug.Bind, "debug-bind", c.Debug.Bind, "serve /debug/pprof/ and /debug/vars on this address; never the app-facing one (debug.bind)")
	fs.StringVar(&c.LogFormat, "log-format", c.LogFormat, "json, or console for a terminal (log_format)")
	fs.StringVar(&c.Bind, "bind", c.Bind, "app-facing HTTP address")
	fs.Var(cliflags.List{P: &c.ZK.Servers}, "zk", "ZooKeeper servers host:port,... (ZooKeeper discovery) (zk.servers)")
	fs.StringVar(&c.Sharding.ClusterName, "cluster", c.Sharding.ClusterName, "cluster name under the ZooKeeper prefix (default "+DefaultClusterName+"; alone it selects ZooKeeper on "+DefaultZK+") (sharding.cluster_name)")
	c.ZK.BindFlags(fs, "needed to read a cluster with acl_read auth")
	fs.Var(cliflags.List{P: &c.Storaged}, "storaged", "static discovery: storaged URLs http://host:port,... (default "+DefaultStoraged+" when no zk)")
	fs.DurationVar(&c.StoragedPoll, "storaged-poll", c.StoragedPoll, "how often static discovery reads each storaged's status")
	fs.DurationVar(&c.ProxyTimeout, "proxy-timeout", c.ProxyTimeout, "bound of one lookup (504 after)")
	fs.DurationVar(&c.ProxyStageTimeout, "proxy-stage-timeout", c.ProxyStageTimeout, "time one replica gets before another starts (default proxy-timeout / replication)")
	fs.IntVar(&c.Sharding.Replication, "replication", c.Sharding.Replication, "the cluster's replication, for the stage timeout default (sharding.replication)")
	fs.IntVar(&c.Sharding.MinReplication, "min-replication", c.Sharding.MinReplication, "live replicas per partition before a version is served (sharding.min_replication)")
	fs.Float64Var(&c.HedgeBudget, "hedge-budget", c.HedgeBudget, "fraction of lookups that may be hedged (0 = never)")
	fs.Int64Var(&c.CacheSize, "cache-size", c.CacheSize, "hot-key cache size in bytes (0 = off)")
	fs.StringVar(&c.ContentType, "content-type", c.ContentType, "Content-Type of values when storaged sends none")
	fs.IntVar(&c.BatchMaxKeys, "batch-max-keys", c.BatchMaxKeys, "most keys in a batch lookup (413 above)")
	fs.Int64Var(&c.BatchMaxBytes, "batch-max-bytes", c.BatchMaxBytes, "largest batch lookup body in bytes (413 above)")
	fs.DurationVar(&c.BatchKeyTimeout, "batch-key-timeout", c.BatchKeyTimeout, "added to proxy-timeout per key of a batch lookup")
	fs.DurationVar(&c.BatchTimeout, "batch-timeout", c.BatchTimeout, "most a batch lookup waits on replicas that keep answering (504 after)")
	fs.StringVar(&c.XDSBind, "xds-bind", c.XDSBind, "serve Envoy's xDS (ADS over gRPC) on this address")
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "debug, info, warn or error")
	fs.Int64Var(&c.GCHeadroom, "gc-headroom", c.GCHeadroom, "bytes the Go heap may grow past its live size before a collection (0 = Go's default; GOGC, if set, wins)")
}

// Parse builds the configuration from the command line args (without the
// program name): defaults, then the --config file, then the flags given.
// Usage errors go to out.
func Parse(args []string, out io.Writer) (Config, error) {
	c := Default()
	err := cliflags.Parse(args, out, cliflags.Command{
		Name:  "routerd",
		Usage: "Usage: routerd [flags]; the --config file takes the same keys ('_' for '-'; [zk] and [sharding] as storaged's; docs/configuration.md).",
		Bind:  func(fs *flag.FlagSet) { bind(fs, &c) },
		Load: func(path string) error {
			c = Default()
			return Load(path, &c)
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
