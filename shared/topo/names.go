package topo

import (
	"fmt"
	"path"
	"strconv"
	"strings"
)

// DefaultPrefix is the first element of every znode path.
const DefaultPrefix = "spangle"

// ValidName reports whether s may be a db or version name: it matches
// [A-Za-z0-9][A-Za-z0-9_-]*, so it is never hidden, never a path and never
// holds the '@' that separates znode name parts. Servers call it on every
// request, so it is a byte loop rather than a regexp.
func ValidName(s string) bool {
	if s == "" || s[0] == '_' || s[0] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// Paths builds the znode paths of one cluster:
// /<prefix>/<cluster>/v1/{nodes,partitions}.
type Paths struct {
	Prefix  string // default DefaultPrefix
	Cluster string
}

// Root is /<prefix>/<cluster>/v1.
func (p Paths) Root() string {
	prefix := p.Prefix
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return path.Join("/", prefix, p.Cluster, "v1")
}

// Nodes is the parent of the node entries.
func (p Paths) Nodes() string { return p.Root() + "/nodes" }

// Partitions is the parent of the db entries.
func (p Paths) Partitions() string { return p.Root() + "/partitions" }

// DB is partitions/<db>.
func (p Paths) DB(db string) string { return p.Partitions() + "/" + db }

// Version is partitions/<db>/<version>.
func (p Paths) Version(db, version string) string { return p.DB(db) + "/" + version }

// NodeName is the name of a node entry: <shard_id>@<addr>.
func NodeName(shardID, addr string) string { return shardID + "@" + addr }

// ParseNodeName splits <shard_id>@<addr>. Shard ids may not hold '@';
// addresses may (IPv6 zones aside they never do), so it splits at the first.
func ParseNodeName(name string) (shardID, addr string, err error) {
	i := strings.IndexByte(name, '@')
	if i <= 0 || i == len(name)-1 {
		return "", "", fmt.Errorf("%w: node entry %q is not <shard_id>@<addr>", ErrBadName, name)
	}
	return name[:i], name[i+1:], nil
}

// ReplicaName is the name of a partition replica entry: <partition>@<addr>.
func ReplicaName(partition int, addr string) string {
	return strconv.Itoa(partition) + "@" + addr
}

// ParseReplicaName splits <partition>@<addr>. The partition is below
// MaxPartitions.
func ParseReplicaName(name string) (partition int, addr string, err error) {
	i := strings.IndexByte(name, '@')
	if i <= 0 || i == len(name)-1 {
		return 0, "", fmt.Errorf("%w: replica entry %q is not <partition>@<addr>", ErrBadName, name)
	}
	p, err := strconv.Atoi(name[:i])
	if err != nil || p < 0 || p >= MaxPartitions {
		return 0, "", fmt.Errorf("%w: replica entry %q has a partition not within [0, %d)", ErrBadName, name, MaxPartitions)
	}
	return p, name[i+1:], nil
}

// CheckShardID rejects shard ids that cannot be part of a node entry.
func CheckShardID(id string) error {
	if id == "" || strings.ContainsAny(id, "@/") {
		return fmt.Errorf("%w: shard id %q must be non-empty and hold neither '@' nor '/'", ErrBadName, id)
	}
	return nil
}

// CheckAddr rejects addresses that cannot be part of an entry name.
func CheckAddr(addr string) error {
	if addr == "" || strings.ContainsAny(addr, "/@") {
		return fmt.Errorf("%w: address %q must be a non-empty host:port", ErrBadName, addr)
	}
	return nil
}

// CheckVersion rejects a db or version name that ValidName refuses.
func CheckVersion(db, version string) error {
	if !ValidName(db) || !ValidName(version) {
		return fmt.Errorf("%w: db %q and version %q must match [A-Za-z0-9][A-Za-z0-9_-]*", ErrBadName, db, version)
	}
	return nil
}

// CheckReplica rejects what cannot name a partition replica entry.
func CheckReplica(db, version string, partition int, addr string) error {
	if err := CheckVersion(db, version); err != nil {
		return err
	}
	if partition < 0 || partition >= MaxPartitions {
		return fmt.Errorf("%w: partition %d not within [0, %d)", ErrBadName, partition, MaxPartitions)
	}
	return CheckAddr(addr)
}

// CheckNode fills in n's default ShardID (its Addr) and rejects a node
// that cannot be part of an entry name.
func CheckNode(n *Node) error {
	if n.ShardID == "" {
		n.ShardID = n.Addr
	}
	if err := CheckAddr(n.Addr); err != nil {
		return err
	}
	return CheckShardID(n.ShardID)
}
