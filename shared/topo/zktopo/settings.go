package zktopo

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"strings"
	"time"

	"spangle/shared/topo"
)

// DefaultACLRead is acl_read's default: every client may read.
const DefaultACLRead = "world"

// Settings is the [zk] section, the same keys in storaged and routerd
// (docs/configuration.md).
type Settings struct {
	// Servers are the ensemble's host:port addresses. In storaged they
	// turn cluster mode on; in routerd, ZooKeeper discovery.
	Servers []string `toml:"servers"`
	// Prefix is the first znode of every path; default topo.DefaultPrefix.
	Prefix string `toml:"prefix"`
	// SessionTimeout is the ZooKeeper session timeout: how long after a
	// node dies (or loses ZooKeeper) its ephemeral znodes go.
	SessionTimeout time.Duration `toml:"session_timeout"`
	// ConnectTimeout bounds each attempt to reach a server.
	ConnectTimeout time.Duration `toml:"connect_timeout"`
	// AuthFile names a file holding the ZooKeeper digest credential,
	// user:password (the environment variable SPANGLE_ZK_AUTH, when set,
	// wins over it). With a credential the session authenticates, and
	// every znode a storaged creates lets only that identity change it;
	// routerd, which only reads, needs one when acl_read is "auth". The
	// file's content is never logged or shown.
	AuthFile string `toml:"auth_file"`
	// ACLRead is who may read the znodes created with a credential:
	// "world" (default: routers and tools need no secret) or "auth" (the
	// identity only).
	ACLRead string `toml:"acl_read"`
}

// DefaultSettings returns the section's defaults: no servers.
func DefaultSettings() Settings {
	return Settings{Prefix: topo.DefaultPrefix, SessionTimeout: DefaultSessionTimeout,
		ConnectTimeout: DefaultConnectTimeout, ACLRead: DefaultACLRead}
}

// Validate names every bad key of the section, as "config: zk.<key>: why".
func (s Settings) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("config: zk.%s: %s", key, fmt.Sprintf(format, args...)))
	}
	for _, srv := range s.Servers {
		if _, _, err := net.SplitHostPort(srv); err != nil {
			bad("servers", "%q is not host:port", srv)
		}
	}
	if s.ConnectTimeout <= 0 {
		bad("connect_timeout", "must be positive")
	}
	if s.SessionTimeout <= 0 {
		bad("session_timeout", "must be positive")
	}
	if s.Prefix == "" || strings.Contains(s.Prefix, "/") {
		bad("prefix", "must be non-empty without '/'")
	}
	if s.ACLRead != "world" && s.ACLRead != "auth" {
		bad("acl_read", "%q is not world or auth", s.ACLRead)
	}
	return errors.Join(errs...)
}

// BindFlags registers the section's flags on fs but --zk (whose meaning
// each daemon gives) and --zk-acl-read (storaged's: routerd creates no
// znode), writing into s, each with s's value as its
// default. authHelp says what the credential is for in this daemon.
func (s *Settings) BindFlags(fs *flag.FlagSet, authHelp string) {
	fs.StringVar(&s.Prefix, "zk-prefix", s.Prefix, "first element of every znode path (zk.prefix)")
	fs.DurationVar(&s.SessionTimeout, "zk-session-timeout", s.SessionTimeout, "ZooKeeper session timeout: how soon a dead node's znodes go (zk.session_timeout)")
	fs.DurationVar(&s.ConnectTimeout, "zk-connect-timeout", s.ConnectTimeout, "timeout of each attempt to reach a ZooKeeper server (zk.connect_timeout)")
	fs.StringVar(&s.AuthFile, "zk-auth-file", s.AuthFile, "file holding the ZooKeeper digest credential user:password, "+authHelp+"; SPANGLE_ZK_AUTH wins (zk.auth_file)")
}
