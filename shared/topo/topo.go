package topo

import (
	"context"
	"errors"
	"time"
)

// Sentinel errors a backend returns, checked with errors.Is.
var (
	// ErrClosed is returned by every method after Close.
	ErrClosed = errors.New("topo: connection closed")
	// ErrUnavailable means the coordination service cannot be reached now.
	// What was published stays wanted: the backend publishes it again once
	// the service is back.
	ErrUnavailable = errors.New("topo: coordination service unavailable")
	// ErrBadName is returned for a db, version, shard id or address that
	// cannot be part of a znode name.
	ErrBadName = errors.New("topo: bad name")
	// ErrDenied means the coordination service's access control refused
	// the call (a ZooKeeper ACL and a missing or wrong credential). The
	// error names the entry. What was published stays wanted, as with
	// ErrUnavailable, and the backend tries again now and then, so that
	// fixing the credential or the ACL needs no restart.
	ErrDenied = errors.New("topo: refused by the coordination service's access control")
)

// Node is what a storaged publishes about itself under nodes/.
type Node struct {
	// ID is the node's identity, persisted in its local store so it
	// survives restarts and address changes.
	ID string `json:"id"`
	// ShardID decides which partitions the node holds; nodes that share it
	// hold the same partitions. It defaults to Addr.
	ShardID string `json:"shard_id"`
	// Addr is the advertised host:port that routers and peers dial.
	Addr string `json:"addr"`
	// Started is when the process started.
	Started time.Time `json:"started"`
}

// VersionInfo is the data of the persistent partitions/<db>/<version>
// znode: the first node to see a version writes it, later ones read it.
type VersionInfo struct {
	NumPartitions int       `json:"num_partitions"`
	Created       time.Time `json:"created"`
}

// Pin is a db's pin as the cluster decided it: the leader publishes it
// as the persistent pins/<db>, and every node and router follows it.
// Version "" means unpinned (the newest complete version is served).
// Generation orders pins and unpins: each change the leader publishes has
// a greater one than the last, including an unpin, so a follower that
// sees a greater generation knows a step was taken, even back to a
// version it served before.
type Pin struct {
	Version    string `json:"version"`
	Generation uint64 `json:"generation"`
}

// Watcher is the read-only view of the cluster that routers need.
type Watcher interface {
	// Map returns the latest known cluster map, from memory. It never
	// blocks on the network and never returns nil. While the service is
	// unreachable it keeps returning the last map it saw.
	Map() *Map
	// Wait blocks until the map's Revision is greater than after, and
	// returns that map. It returns ctx's error when ctx ends first, and
	// ErrClosed if the backend is closed meanwhile.
	Wait(ctx context.Context, after uint64) (*Map, error)
}

// Conn is the coordination service as a storaged node uses it. It is safe
// for concurrent use.
//
// Everything a node publishes is remembered by the Conn: when a session is
// lost and a new one made, or when the service comes back after an
// outage, the Conn publishes it all again by itself, so callers publish
// once and never retry. A call made while the service is unreachable
// returns ErrUnavailable promptly (or ctx's error), and its effect is
// still remembered and applied once the service is back.
//
// Every method returns ErrClosed after Close, and ErrBadName for a name
// that cannot be part of an entry.
type Conn interface {
	Watcher

	// RegisterNode publishes n as the ephemeral nodes/<shard_id>@<addr>.
	// An empty ShardID defaults to Addr. Registering again replaces the
	// previous entry. Errors: ErrBadName, ErrUnavailable, ErrClosed.
	RegisterNode(ctx context.Context, n Node) error
	// PublishVersion creates partitions/<db>/<version> holding info if it
	// does not exist yet (or exists without info), and returns what it
	// holds: the first writer's info wins. Errors: ErrBadName (also for
	// info.NumPartitions not within [1, MaxPartitions]), ErrUnavailable
	// (the zero info is returned; the entry is created once the service
	// is back), ErrClosed.
	PublishVersion(ctx context.Context, db, version string, info VersionInfo) (VersionInfo, error)
	// PublishPartition publishes the ephemeral
	// partitions/<db>/<version>/<partition>@<addr>: addr serves it. A
	// missing version entry is created, holding the info this Conn gave
	// PublishVersion if any (else none, which a later PublishVersion
	// fills). Errors: ErrBadName (also for a partition not within
	// [0, MaxPartitions)), ErrUnavailable, ErrClosed.
	PublishPartition(ctx context.Context, db, version string, partition int, addr string) error
	// UnpublishPartition removes what PublishPartition published. Removing
	// something absent is not an error. Errors: ErrBadName,
	// ErrUnavailable, ErrClosed.
	UnpublishPartition(ctx context.Context, db, version string, partition int, addr string) error
	// Connected reports whether a session with the service is up now.
	Connected() bool
	// Close ends the session, which removes every ephemeral entry this
	// Conn published. Closing twice is not an error.
	Close() error
}
