package wire

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"spangle/shared/buildinfo"
	"spangle/shared/topo"
)

// Header names. They keep sequins' names so that sequins clients work.
const (
	// HeaderVersion is set on every answer about an existing db, and on a
	// request it pins the version to answer from.
	HeaderVersion = "X-Sequins-Version"
	// HeaderProxiedTo names the storaged node that answered through routerd.
	HeaderProxiedTo = "X-Sequins-Proxied-To"
	// HeaderPartition carries a key's partition, computed by Envoy's Lua
	// filter, so that Envoy routes can match it.
	HeaderPartition = "X-Spangle-Partition"
	// HeaderPin is set on an answer from a db that a _PIN marker holds
	// at a version (a rollback or a freeze), naming that version, so a
	// client can tell a sanctioned step back from a bug. X-Sequins-Version
	// still names the version that answered.
	HeaderPin = "X-Spangle-Pin"
)

// Version states, as sequins' /healthz names them.
const (
	StateBuilding = "BUILDING"
	StateActive   = "ACTIVE"
	StateRemoving = "REMOVING"
	StateError    = "ERROR"
	// StateHeld is spangle's own, beside sequins' four: a version newer
	// than the one a _PIN marker holds its db at. It is not loaded, and
	// loads once the marker is removed; the reason names the pin.
	StateHeld = "HELD"
	// StateSettling (storaged, not a sequins state) is a version seen in
	// the source whose files have not yet stayed unchanged for the
	// settle time: it is not loaded yet, and says so rather than being
	// absent or taken for one building.
	StateSettling = "SETTLING"
)

// HeldReason is the reason shown with StateHeld.
func HeldReason(pin string) string {
	return "held back: the db is pinned to " + pin + "; it loads once _PIN is removed"
}

// Reserved paths. A db cannot be named healthz or metrics with a key-less
// request, but /healthz/<key> still looks up a key in a db named healthz.
const (
	PathHealth  = "/healthz"
	PathMetrics = "/metrics"
	// PathFavicon is what a browser asks for beside a status page: both
	// daemons answer 404 without counting it as a bad request.
	PathFavicon = "/favicon.ico"
)

// MaxKeyLen bounds the unescaped key: longer keys get 414, since no sane
// batch job writes them and the request would only cost memory.
const MaxKeyLen = 32 << 10

// DefaultContentType is the Content-Type of values unless configured.
const DefaultContentType = "application/octet-stream"

// Errors of ParsePath. Servers map them to status codes with StatusOf.
var (
	ErrEmptyKey   = errors.New("wire: empty key")
	ErrKeyTooLong = errors.New("wire: key too long")
	ErrBadPath    = errors.New("wire: bad path")
)

// Target is what a request path names: a db's status (Key == nil and
// HasKey false) or one key of a db.
type Target struct {
	DB  string
	Key []byte
	// KeyString holds the same bytes as Key, for use as a map key
	// without another copy.
	KeyString string
	HasKey    bool
}

// ParsePath splits an escaped request path (http.Request.URL.EscapedPath)
// into a db and a URL-unescaped key. The key is everything after
// "/<db>/", so it may hold '/' literally or as %2F and any byte as %XX.
// "/<db>" alone names the db's status.
func ParsePath(escaped string) (Target, error) {
	if !strings.HasPrefix(escaped, "/") || escaped == "/" {
		return Target{}, fmt.Errorf("%w: %q", ErrBadPath, escaped)
	}
	rest := escaped[1:]
	dbPart, keyPart, hasKey := strings.Cut(rest, "/")
	db, err := url.PathUnescape(dbPart)
	if err != nil || !topo.ValidName(db) {
		return Target{}, fmt.Errorf("%w: bad db name %q", ErrBadPath, dbPart)
	}
	if !hasKey {
		return Target{DB: db}, nil
	}
	// A quick bound before unescaping: %XX takes 3 bytes per key byte.
	if len(keyPart) > 3*MaxKeyLen {
		return Target{}, ErrKeyTooLong
	}
	key, err := url.PathUnescape(keyPart)
	if err != nil {
		return Target{}, fmt.Errorf("%w: bad escape in key: %v", ErrBadPath, err)
	}
	if key == "" {
		return Target{}, ErrEmptyKey
	}
	if len(key) > MaxKeyLen {
		return Target{}, ErrKeyTooLong
	}
	return Target{DB: db, Key: []byte(key), KeyString: key, HasKey: true}, nil
}

// KeyPath is the escaped path of a key lookup, the inverse of ParsePath.
func KeyPath(db string, key []byte) string {
	return "/" + db + "/" + url.PathEscape(string(key))
}

// NodeStatus is the JSON of a storaged's status page (GET / with Accept:
// application/json). routerd's static discovery reads it.
type NodeStatus struct {
	Node topo.Node `json:"node"`
	// Build is the build of spangle the node runs.
	Build buildinfo.Info `json:"build"`
	// Mode is "standalone" or "cluster".
	Mode string              `json:"mode"`
	DBs  map[string]DBStatus `json:"dbs"`
	// Cluster is the node's cached view of the whole cluster (cluster
	// mode only).
	Cluster *topo.Map `json:"cluster,omitempty"`
	// Coordination is what the node knows of the cluster's leader and its
	// assignments (cluster mode only).
	Coordination *CoordinationStatus `json:"coordination,omitempty"`
	// Source is what the node knows of its source root.
	Source *SourceStatus `json:"source,omitempty"`
}

// SourceStatus is the outcome of a node's last listing of its source root.
type SourceStatus struct {
	Root string `json:"root"`
	// Error is why the last listing failed; "" when it worked.
	Error string `json:"error,omitempty"`
	// Since is when listing began to fail.
	Since time.Time `json:"since,omitzero"`
}

// HealthSource is the /healthz key under which a node that cannot list
// its source root reports it, in the shape of a db:
// {"_source": {"<root>": {"state": "ERROR", "reason": "..."}}}. No db has
// this name (db names never start with '_').
const HealthSource = "_source"

// DBStatus is one db on a node.
type DBStatus struct {
	// Current is the version served to clients who pin none; "" if none.
	Current  string                   `json:"current_version"`
	Versions map[string]VersionStatus `json:"versions"`
	// Pin is the version a _PIN marker holds the db at; "" when none is
	// in force.
	Pin string `json:"pin,omitempty"`
	// PinGeneration orders pins and unpins: each one in force gets a
	// greater generation (cluster mode: the leader's; standalone: the
	// time of the step in nanoseconds). routerd's static discovery takes
	// the pin of the greatest generation over the nodes.
	PinGeneration uint64 `json:"pin_generation,omitempty"`
	// PinError says why the marker is not followed (malformed, names a
	// version the source does not hold, or that failed to load); what is
	// served stays as it was.
	PinError string `json:"pin_error,omitempty"`
	// FormatError says why the db's _FORMAT marker (how a Parquet
	// version's columns map) is not followed; no new version is loaded
	// until it is fixed.
	FormatError string `json:"format_error,omitempty"`
}

// VersionStatus is one version of a db on a node.
type VersionStatus struct {
	State         string `json:"state"`
	Reason        string `json:"reason,omitempty"`
	NumPartitions int    `json:"num_partitions"`
	// Partitions lists the partitions this node has loaded and serves.
	Partitions []int     `json:"partitions"`
	Created    time.Time `json:"created"`
	// LoadSeconds is how long this node took to build the version from
	// the source; 0 when it was reused from the local store or is still
	// building.
	LoadSeconds float64 `json:"load_seconds,omitempty"`
	// Activated is when this node last made the version the one served
	// to requests that pin none; zero until then.
	Activated time.Time `json:"activated,omitzero"`
	// CorruptPartitions are held partitions found with a corrupt block
	// and being rebuilt; their other blocks still answer.
	CorruptPartitions []int `json:"corrupt_partitions,omitempty"`
	// Progress is how far this node's load of the version has come,
	// while it is read from the source.
	Progress *LoadProgress `json:"progress,omitempty"`
}

// Health is one entry of GET /healthz: {"<db>": {"<version>": Health}}.
type Health struct {
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
	// CorruptPartitions (storaged) are partitions of the version found
	// with a corrupt block on this node and being rebuilt, as on the
	// status page.
	CorruptPartitions []int `json:"corrupt_partitions,omitempty"`
	// Progress (storaged) is how far the node's load of a BUILDING
	// version has come, as on the status page.
	Progress *LoadProgress `json:"progress,omitempty"`
}

// EqualFoldASCII reports whether b equals the ASCII s, ignoring case: a
// header name or token compared where it was read, without a string.
func EqualFoldASCII(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := 0; i < len(b); i++ {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
