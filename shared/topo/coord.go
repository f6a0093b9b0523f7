package topo

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"
)

// ErrFenced is returned by Coordination.Commit when the decision's fence
// no longer holds: its leader no longer leads, the node list it was
// decided from changed, or another decision landed after the one it was
// based on. Nothing of the decision was written.
var ErrFenced = errors.New("topo: decision fenced off")

// Ring is the node list a decision is made from, read from the service
// itself rather than from the cached Map.
type Ring struct {
	// Version is the children version of nodes/ (ZooKeeper's cversion):
	// it grows with every node that joins or leaves, so two views of the
	// list compare by it.
	Version int64 `json:"version"`
	// Nodes are the entry names <shard_id>@<addr>, sorted.
	Nodes []string `json:"nodes"`
}

// ShardIDs returns the distinct shard ids of the ring, sorted.
func (r Ring) ShardIDs() []string {
	seen := map[string]bool{}
	var ids []string
	for _, n := range r.Nodes {
		id, _, err := ParseNodeName(n)
		if err != nil || seen[id] {
			continue
		}
		seen[id] = true
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Addrs returns the addresses of the ring's nodes, sorted.
func (r Ring) Addrs() []string {
	var addrs []string
	for _, n := range r.Nodes {
		if _, addr, err := ParseNodeName(n); err == nil {
			addrs = append(addrs, addr)
		}
	}
	sort.Strings(addrs)
	return addrs
}

// Decision is the record of the last decision that landed. Its Epoch
// grows by one with every decision, so a leader that read epoch e can
// only land a decision while the epoch is still e.
type Decision struct {
	Epoch       int64     `json:"-"`
	RingVersion int64     `json:"ring_version"`
	Leader      string    `json:"leader"`       // the leader's id, as given to Campaign
	LeaderToken string    `json:"leader_token"` // its election entry
	Time        time.Time `json:"time"`
}

// Fence is what a decision carries so that a stale one never lands.
type Fence struct {
	// Token is the leader's election entry, from Leadership.Token.
	Token string
	// Ring is the node list the decision was made from.
	Ring Ring
	// Epoch is the Decision.Epoch the leader read before deciding.
	Epoch int64
}

// Assignment is the leader's word on who holds the partitions of one
// version, stored at assignments/<db>/<version>. It overrides the plain
// ring for that version.
type Assignment struct {
	DB      string `json:"db"`
	Version string `json:"version"`
	// Strategy names the placement strategy that made it.
	Strategy string `json:"strategy"`
	// Replicas lists, per partition, the shard ids that hold it.
	Replicas [][]string `json:"replicas"`
	// Previous lists, per partition, shard ids that held it before and
	// keep it until every shard id of Replicas has published it, so a
	// move never lowers the replication.
	Previous [][]string `json:"previous,omitempty"`
	// RingVersion, Leader and Time say which decision wrote it.
	RingVersion int64     `json:"ring_version"`
	Leader      string    `json:"leader"`
	Time        time.Time `json:"time"`
}

// Leadership is a won election. It lasts until Lost is closed: the
// session that holds the election entry ended, or Resign was called.
type Leadership interface {
	// Token names the election entry, for Fence.Token.
	Token() string
	// Lost is closed once the leadership is over.
	Lost() <-chan struct{}
	// Resign gives the leadership up; the next candidate takes over.
	Resign(ctx context.Context) error
}

// Coordination is what the coordinator needs beyond Conn: a leader
// election and decisions fenced by the leadership, the node list and the
// previous decision. Backends implement it beside Conn, with the same
// session. It is safe for concurrent use.
//
// Every method returns ErrUnavailable without a session and ErrClosed
// after the Conn is closed.
type Coordination interface {
	// Campaign enters the election under id (the node's address) and
	// blocks until this candidate leads, or ctx ends (the candidacy is
	// then withdrawn). Candidates lead in the order they entered.
	Campaign(ctx context.Context, id string) (Leadership, error)
	// Leader returns the current leader's id and token, both empty when
	// nobody campaigns.
	Leader(ctx context.Context) (id, token string, err error)
	// Ring reads the node list and its version from the service.
	Ring(ctx context.Context) (Ring, error)
	// LastDecision reads the record of the last decision; its zero value
	// (Epoch 0) when none landed.
	LastDecision(ctx context.Context) (Decision, error)
	// Assignments reads every assignments/<db>/<version> entry.
	Assignments(ctx context.Context) ([]Assignment, error)
	// Commit writes the assignments and a new Decision for leader id,
	// all at once and only if f holds: f.Token is the leading election
	// entry, nodes/ is still f.Ring (every node of it still there; no
	// node joined), and the last decision is still f.Epoch, with a ring
	// version not above f.Ring.Version. Otherwise it writes nothing and
	// returns ErrFenced. Assignments with bad names give ErrBadName.
	Commit(ctx context.Context, f Fence, id string, as []Assignment) (Decision, error)
	// PruneVersion deletes a version nobody serves: partitions/<db>/<version>
	// and assignments/<db>/<version> go together, and only while the
	// version entry has no replica entry; partitions/<db> and
	// assignments/<db> go too once they hold nothing. A replica published
	// at the same moment either keeps it all (false, nil) or comes after
	// and creates the version entry again, as PublishPartition does. It
	// reports whether the version's entries are gone, which they are
	// when they never existed. Errors: ErrBadName, ErrUnavailable,
	// ErrClosed.
	PruneVersion(ctx context.Context, db, version string) (bool, error)
	// SetPin publishes db's pin as the persistent pins/<db>, for every
	// node and router to follow (they see it in Map().Pins), only while
	// token (Leadership.Token) leads and p.Generation is greater than the
	// generation stored: generations only grow, so a stale leader's or a
	// repeated write never takes a step back. Otherwise it writes nothing
	// and returns ErrFenced. Errors: ErrBadName (a bad db, or a version
	// that is neither "" nor a valid name), ErrUnavailable, ErrClosed.
	SetPin(ctx context.Context, token, db string, p Pin) error
}

// Election is the parent of the election entries, one ephemeral
// sequential znode per candidate holding its id.
func (p Paths) Election() string { return p.Root() + "/election" }

// Decision is the persistent znode recording the last decision; its data
// version is the Decision epoch.
func (p Paths) Decision() string { return p.Root() + "/decision" }

// Assignments is the parent of the assignment entries.
func (p Paths) Assignments() string { return p.Root() + "/assignments" }

// Assignment is assignments/<db>/<version>.
func (p Paths) Assignment(db, version string) string {
	return p.Assignments() + "/" + db + "/" + version
}

// CheckAssignment rejects an assignment that cannot be stored: bad
// names, no partitions or more than MaxPartitions, more than MaxHolders
// holders of a partition, or a holder that is no shard id.
func CheckAssignment(a Assignment) error {
	if err := CheckVersion(a.DB, a.Version); err != nil {
		return err
	}
	if len(a.Replicas) == 0 {
		return fmt.Errorf("%w: assignment of %s/%s has no partitions", ErrBadName, a.DB, a.Version)
	}
	if len(a.Replicas) > MaxPartitions {
		return fmt.Errorf("%w: assignment of %s/%s has %d partitions, more than %d", ErrBadName, a.DB, a.Version, len(a.Replicas), MaxPartitions)
	}
	if a.Previous != nil && len(a.Previous) != len(a.Replicas) {
		return fmt.Errorf("%w: assignment of %s/%s has %d previous holder lists for %d partitions",
			ErrBadName, a.DB, a.Version, len(a.Previous), len(a.Replicas))
	}
	for _, lists := range [][][]string{a.Replicas, a.Previous} {
		for p, hs := range lists {
			if len(hs) > MaxHolders {
				return fmt.Errorf("%w: assignment of %s/%s names %d holders of partition %d, more than %d",
					ErrBadName, a.DB, a.Version, len(hs), p, MaxHolders)
			}
			for _, h := range hs {
				if err := CheckShardID(h); err != nil {
					return fmt.Errorf("assignment of %s/%s, partition %d: %w", a.DB, a.Version, p, err)
				}
			}
		}
	}
	return nil
}
