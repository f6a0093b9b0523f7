package coordinator

import (
	"context"
	"sort"
	"time"

	"spangle/shared/dbver"
	"spangle/shared/topo"
	"spangle/shared/wait"
	"spangle/shared/wire"
)

// Status is what the status page shows of the coordination.
type Status struct {
	Self        string `json:"self"`
	Leader      string `json:"leader"`
	LeaderToken string `json:"leader_token"`
	Leading     bool   `json:"leading"`
	// RingVersion is the node list's version as last read.
	RingVersion int64         `json:"ring_version"`
	Nodes       int           `json:"nodes"`
	Decision    topo.Decision `json:"last_decision"`
	// InProgress lists assignments whose copies are not all published.
	InProgress       []Progress `json:"in_progress"`
	Strategy         string     `json:"strategy"`
	Quorum           Quorum     `json:"quorum"`
	RereplicateAfter string     `json:"rereplicate_after"`
	Updated          time.Time  `json:"updated"`
	// Pins is, on the leader, what it read of each db's _PIN marker and
	// published.
	Pins map[string]PinStatus `json:"pins,omitempty"`
	// RoundError is, on the leader, why its last round decided nothing
	// (it tries again each round), and RoundErrorSince when its rounds
	// began to fail; "" while they succeed.
	RoundError      string    `json:"round_error,omitempty"`
	RoundErrorSince time.Time `json:"round_error_since,omitzero"`
}

// setRoundError records the leader's last round's outcome: err nil
// when it succeeded (or the node no longer leads).
func (c *Coordinator) setRoundError(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil {
		c.status.RoundError, c.status.RoundErrorSince = "", time.Time{}
		c.metrics.failing.Set(0)
		return
	}
	if c.status.RoundError == "" {
		c.status.RoundErrorSince = c.opts.Now().UTC()
	}
	c.status.RoundError = err.Error()
	c.metrics.failing.Set(1)
}

// Progress is an assignment in progress.
type Progress struct {
	DB      string `json:"db"`
	Version string `json:"version"`
	// Pending is the copies assigned but not yet published.
	Pending int `json:"pending"`
}

// Status returns the last known coordination state, from memory.
func (c *Coordinator) Status() Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.status
	s.InProgress = append([]Progress(nil), s.InProgress...)
	s.Self = c.opts.Self.Addr
	s.Strategy = c.opts.Strategy.Name()
	s.Quorum = c.opts.Quorum
	if c.opts.RereplicateAfter < 0 {
		s.RereplicateAfter = "off"
	} else {
		s.RereplicateAfter = c.opts.RereplicateAfter.String()
	}
	return s
}

func (c *Coordinator) setLeading(token string, leading bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.status.Leading = leading
	if leading {
		c.status.Leader, c.status.LeaderToken = c.opts.Self.Addr, token
	}
}

// setProgress records the ring, the last decision and the assignments
// still in progress.
func (c *Coordinator) setProgress(m *topo.Map, ring topo.Ring, d topo.Decision, as []topo.Assignment) {
	latest := map[dbver.Version]topo.Assignment{}
	for _, a := range as {
		latest[dbver.Of(a.DB, a.Version)] = a // later entries are newer
	}
	var prog []Progress
	for k, a := range latest {
		v := m.Version(k.DB, k.Version)
		if v == nil {
			continue
		}
		if n := Pending(a, Published(m, v)); n > 0 {
			prog = append(prog, Progress{DB: k.DB, Version: k.Version, Pending: n})
		}
	}
	sort.Slice(prog, func(i, j int) bool {
		if prog[i].DB != prog[j].DB {
			return prog[i].DB < prog[j].DB
		}
		return prog[i].Version < prog[j].Version
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	c.status.RingVersion = ring.Version
	c.status.Nodes = len(ring.Nodes)
	c.status.Decision = d
	c.status.InProgress = prog
	c.status.Updated = c.opts.Now().UTC()
}

// refreshLoop keeps the status fresh on every node, leader or not.
func (c *Coordinator) refreshLoop(ctx context.Context) {
	wait.Every(ctx, c.opts.Interval, c.refresh)
}

func (c *Coordinator) refresh(ctx context.Context) {
	id, token, err := c.opts.Coord.Leader(ctx)
	if err != nil {
		return // keep the last known status
	}
	ring, err := c.opts.Coord.Ring(ctx)
	if err != nil {
		return
	}
	d, err := c.opts.Coord.LastDecision(ctx)
	if err != nil {
		return
	}
	as, err := c.opts.Coord.Assignments(ctx)
	if err != nil {
		return
	}
	c.mu.Lock()
	c.status.Leader, c.status.LeaderToken = id, token
	c.mu.Unlock()
	c.setProgress(c.opts.Conn.Map(), ring, d, as)
}

// Vote is this node's ELECT answer for a partition: the leader it sees,
// the shard id first in the partition's holders (the assignment's, or
// the plain placement's over the ring), the ring version, and its own
// state of the partition.
func (c *Coordinator) Vote(ctx context.Context, k dbver.Partition) (Vote, error) {
	db, version, p := k.DB, k.Version, k.P
	id, token, err := c.opts.Coord.Leader(ctx)
	if err != nil {
		return Vote{}, err
	}
	ring, err := c.opts.Coord.Ring(ctx)
	if err != nil {
		return Vote{}, err
	}
	as, err := c.opts.Coord.Assignments(ctx)
	if err != nil {
		return Vote{}, err
	}
	v := Vote{Node: c.opts.Self.Addr, Leader: id, LeaderToken: token, Partition: p, RingVersion: ring.Version,
		State: c.opts.PartitionState(k)}
	if a, ok := assignmentFor(as, db, version); ok && p < len(a.Replicas) && len(a.Replicas[p]) > 0 {
		v.Index0 = a.Replicas[p][0]
	} else if mv := c.opts.Conn.Map().Version(db, version); mv != nil && p < mv.NumPartitions {
		pl := c.opts.Strategy.Place(ring.ShardIDs(), mv.NumPartitions, c.opts.Replication, nil)
		if len(pl[p]) > 0 {
			v.Index0 = pl[p][0]
		}
	}
	return v, nil
}

// WireStatus is Status as the status page shows it.
func (c *Coordinator) WireStatus() *wire.CoordinationStatus {
	s := c.Status()
	w := &wire.CoordinationStatus{
		Leader: s.Leader, LeaderToken: s.LeaderToken, Leading: s.Leading,
		RingVersion: s.RingVersion, Nodes: s.Nodes,
		Epoch: s.Decision.Epoch, LastDecision: s.Decision.Time, DecidedBy: s.Decision.Leader,
		Strategy: s.Strategy, Quorum: string(s.Quorum), RereplicateAfter: s.RereplicateAfter,
		RoundError: s.RoundError, RoundErrorSince: s.RoundErrorSince,
	}
	for _, p := range s.InProgress {
		w.InProgress = append(w.InProgress, wire.AssignmentProgress{DB: p.DB, Version: p.Version, Pending: p.Pending})
	}
	for db, p := range s.Pins {
		if p.Error != "" {
			if w.PinErrors == nil {
				w.PinErrors = map[string]string{}
			}
			w.PinErrors[db] = p.Error
		}
	}
	return w
}
