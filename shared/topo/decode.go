package topo

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
)

// Bounds on every number the coordination service hands back. Anyone
// who can write a znode can write any number; a reader that allocates
// or counts by such a number without a bound lets one bad entry take
// every process of the cluster down. A payload that breaks a bound is
// refused whole (ErrInvalid): the reader ignores the entry, says so, and
// allocates nothing for it.
const (
	// MaxPartitions bounds a version's partition count, and so a
	// replica entry's partition index (below it). A version is one data
	// file a partition; a job writing more files than this is not one
	// spangle serves.
	MaxPartitions = 1 << 16
	// MaxHolders bounds the shard ids an assignment names for one
	// partition, its replication.
	MaxHolders = 1 << 8
	// MaxPinGeneration is the greatest pin generation. It is the
	// greatest integer every JSON reader holds exactly (2^53 - 1), and
	// far beyond what one pin change a second reaches: a leader refuses
	// to step past it rather than wrap (see the coordinator).
	MaxPinGeneration = 1<<53 - 1
	// MaxRingVersion bounds a ring version: ZooKeeper's children
	// version is an int32.
	MaxRingVersion = math.MaxInt32
	// MaxPayload bounds the bytes of one entry, ZooKeeper's default
	// jute.maxbuffer (1 MiB): nothing larger is one of ours.
	MaxPayload = 1 << 20
)

// ErrInvalid says an entry read from the coordination service breaks a
// bound or does not parse. The entry is ignored.
var ErrInvalid = errors.New("topo: invalid entry")

// ErrNoInfo says a version entry holds no info yet: it was created as
// the parent of a replica entry before any node gave its partition
// count. It is not invalid; the info comes later.
var ErrNoInfo = errors.New("topo: version entry holds no info yet")

func invalid(what string, format string, args ...any) error {
	return fmt.Errorf("%w: %s: "+format, append([]any{ErrInvalid, what}, args...)...)
}

func decodeJSON(what string, data []byte, v any) error {
	if len(data) > MaxPayload {
		return invalid(what, "%d bytes, more than %d", len(data), MaxPayload)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return invalid(what, "%v", err)
	}
	return nil
}

// CheckVersionInfo rejects a partition count out of [1, MaxPartitions].
func CheckVersionInfo(info VersionInfo) error {
	if info.NumPartitions < 1 || info.NumPartitions > MaxPartitions {
		return fmt.Errorf("%w: %d partitions, not within [1, %d]", ErrBadName, info.NumPartitions, MaxPartitions)
	}
	return nil
}

// DecodeNode reads the data of the node entry name (<shard_id>@<addr>).
// The name says where the node is and what it holds; the data adds its
// id and start time and may be empty. The name's shard id and address
// win over the data's.
func DecodeNode(name string, data []byte) (Node, error) {
	shard, addr, err := ParseNodeName(name)
	if err != nil {
		return Node{}, invalid("node "+name, "%v", err)
	}
	if err := CheckShardID(shard); err != nil {
		return Node{}, invalid("node "+name, "%v", err)
	}
	if err := CheckAddr(addr); err != nil {
		return Node{}, invalid("node "+name, "%v", err)
	}
	var n Node
	if len(data) > 0 {
		if err := decodeJSON("node "+name, data, &n); err != nil {
			return Node{}, err
		}
	}
	n.ShardID, n.Addr = shard, addr
	return n, nil
}

// DecodeVersionInfo reads the data of a version entry: ErrNoInfo when
// it is empty, ErrInvalid when it does not parse or its partition count
// is not within [1, MaxPartitions].
func DecodeVersionInfo(data []byte) (VersionInfo, error) {
	if len(data) == 0 {
		return VersionInfo{}, ErrNoInfo
	}
	var info VersionInfo
	if err := decodeJSON("version info", data, &info); err != nil {
		return VersionInfo{}, err
	}
	if err := CheckVersionInfo(info); err != nil {
		return VersionInfo{}, invalid("version info", "%v", err)
	}
	return info, nil
}

// DecodePin reads the data of pins/<db>: the pin must name "" or a valid
// version, with a generation within [0, MaxPinGeneration].
func DecodePin(db string, data []byte) (Pin, error) {
	var p Pin
	if err := decodeJSON("pin of "+db, data, &p); err != nil {
		return Pin{}, err
	}
	if err := CheckPin(db, p); err != nil {
		return Pin{}, invalid("pin of "+db, "%v", err)
	}
	return p, nil
}

// DecodeDecision reads the data of the decision entry (empty: no
// decision landed yet, the zero record). Its Epoch is the entry's data
// version, which the caller sets.
func DecodeDecision(data []byte) (Decision, error) {
	var d Decision
	if len(data) == 0 {
		return d, nil
	}
	if err := decodeJSON("decision", data, &d); err != nil {
		return Decision{}, err
	}
	if d.RingVersion < 0 || d.RingVersion > MaxRingVersion {
		return Decision{}, invalid("decision", "ring version %d not within [0, %d]", d.RingVersion, MaxRingVersion)
	}
	return d, nil
}

// DecodeAssignment reads the data of assignments/<db>/<version>; the
// names come from the entry's path and win over the data's.
func DecodeAssignment(db, version string, data []byte) (Assignment, error) {
	what := "assignment of " + db + "/" + version
	var a Assignment
	if err := decodeJSON(what, data, &a); err != nil {
		return Assignment{}, err
	}
	a.DB, a.Version = db, version
	if err := CheckAssignment(a); err != nil {
		return Assignment{}, invalid(what, "%v", err)
	}
	if a.RingVersion < 0 || a.RingVersion > MaxRingVersion {
		return Assignment{}, invalid(what, "ring version %d not within [0, %d]", a.RingVersion, MaxRingVersion)
	}
	return a, nil
}
