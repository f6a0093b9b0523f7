package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"spangle/shared/dbver"
)

// ElectPrefix starts the path of the ELECT endpoint:
// GET /_elect/<db>/<version>/<partition>.
const ElectPrefix = "/_elect/"

// Partition states a Vote reports, beside the version manager's own
// (BUILDING, ACTIVE, ...).
const (
	// StateNotFound: this node does not hold the partition.
	StateNotFound = "NOTFOUND"
	// StatePublished: this node serves the partition (it is in the map).
	StatePublished = "PUBLISHED"
)

// Vote is a node's answer to ELECT, as in seed 004: who it thinks leads
// and holds index 0 of the partition, the ring version it sees, and its
// own state of the partition.
type Vote struct {
	Node        string `json:"node"`         // the answering node's address
	Leader      string `json:"leader"`       // the leader's id, "" if none
	LeaderToken string `json:"leader_token"` // the leader's election entry
	Index0      string `json:"index0"`       // the shard id first in the partition's holders
	Partition   int    `json:"partition"`
	RingVersion int64  `json:"ring_version"`
	State       string `json:"state"`
}

// Quorum says how many votes a leader needs before committing.
type Quorum string

// The quorums of seed 004 that make sense with a ZooKeeper leader.
const (
	// QuorumAll needs every live node's vote (the default).
	QuorumAll Quorum = "all"
	// QuorumMajority needs more than half of the live nodes.
	QuorumMajority Quorum = "majority"
)

// ParseQuorum accepts "", "all" and "majority".
func ParseQuorum(s string) (Quorum, error) {
	switch Quorum(s) {
	case "", QuorumAll:
		return QuorumAll, nil
	case QuorumMajority:
		return QuorumMajority, nil
	}
	return "", fmt.Errorf("coordinator: unknown quorum %q (want all or majority)", s)
}

// Need is how many agreeing votes of n voters this quorum requires.
func (q Quorum) Need(n int) int {
	if q == QuorumMajority {
		return n/2 + 1
	}
	return n
}

// ErrNoQuorum means too few nodes agreed that this node leads on the
// ring version it decided from; the leader tries again later.
var ErrNoQuorum = errors.New("coordinator: no quorum")

// Count decides a leader's election round, as seed 004 does: votes from
// a ring older than the leader's are discarded, a vote from a newer ring
// means the leader's own view is stale (no quorum), and the rest must
// name this leader at least need times.
func Count(votes []Vote, leaderToken string, ringVersion int64, need int) error {
	agree, older := 0, 0
	for _, v := range votes {
		switch {
		case v.RingVersion > ringVersion:
			return fmt.Errorf("%w: %s sees ring version %d, newer than the leader's %d", ErrNoQuorum, v.Node, v.RingVersion, ringVersion)
		case v.RingVersion < ringVersion:
			older++
		case v.LeaderToken == leaderToken:
			agree++
		}
	}
	if agree < need {
		return fmt.Errorf("%w: %d of %d votes agree (%d from older rings discarded), %d needed", ErrNoQuorum, agree, len(votes), older, need)
	}
	return nil
}

// ParseElectPath splits /_elect/<db>/<version>/<partition>.
func ParseElectPath(p string) (dbver.Partition, error) {
	rest, ok := strings.CutPrefix(p, ElectPrefix)
	parts := strings.Split(rest, "/")
	if !ok || len(parts) != 3 || parts[0] == "" || parts[1] == "" {
		return dbver.Partition{}, fmt.Errorf("coordinator: ELECT path %q is not %s<db>/<version>/<partition>", p, ElectPrefix)
	}
	partition, err := strconv.Atoi(parts[2])
	if err != nil || partition < 0 {
		return dbver.Partition{}, fmt.Errorf("coordinator: ELECT path %q has a bad partition", p)
	}
	return dbver.Of(parts[0], parts[1]).Partition(partition), nil
}

// ServeHTTP answers GET /_elect/<db>/<version>/<partition> with this
// node's Vote as JSON. It reads the election and the ring from the
// coordination service, as seed 004 loads its ring only for ELECT.
func (c *Coordinator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", "GET")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	k, err := ParseElectPath(r.URL.Path)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	v, err := c.Vote(r.Context(), k)
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// ask gathers the votes of addrs on one partition, in parallel. Nodes
// that do not answer are left out (they count against the quorum).
func (c *Coordinator) ask(ctx context.Context, addrs []string, k dbver.Partition) []Vote {
	ctx, cancel := context.WithTimeout(ctx, c.opts.ElectTimeout)
	defer cancel()
	var (
		mu    sync.Mutex
		votes []Vote
		wg    sync.WaitGroup
	)
	for _, addr := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := c.askOne(ctx, addr, k)
			if err != nil {
				c.log.Debug("ELECT unanswered")
				return
			}
			mu.Lock()
			votes = append(votes, v)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return votes
}

func (c *Coordinator) askOne(ctx context.Context, addr string, k dbver.Partition) (Vote, error) {
	if addr == c.opts.Self.Addr {
		return c.Vote(ctx, k)
	}
	u := url.URL{Scheme: c.opts.Scheme, Host: addr, Path: ElectPrefix + k.String()}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return Vote{}, fmt.Errorf("coordinator: %w", err)
	}
	resp, err := c.opts.Client.Do(req)
	if err != nil {
		return Vote{}, fmt.Errorf("coordinator: ELECT %s: %w", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Vote{}, fmt.Errorf("coordinator: ELECT %s: %s", addr, resp.Status)
	}
	var v Vote
	if err := json.NewDecoder(http.MaxBytesReader(nil, resp.Body, 1<<16)).Decode(&v); err != nil {
		return Vote{}, fmt.Errorf("coordinator: ELECT %s: %w", addr, err)
	}
	return v, nil
}

// defaultElectTimeout bounds one ELECT round.
const defaultElectTimeout = 5 * time.Second
