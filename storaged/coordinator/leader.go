package coordinator

import (
	"context"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"

	"spangle/shared/dbver"
	"spangle/shared/placement"
	"spangle/shared/topo"
)

// leaderState is what a leader remembers between its rounds. A new
// leader starts afresh, so it waits RereplicateAfter (and PruneAfter)
// again from when it took over: late rather than wrong.
type leaderState struct {
	lastSeen      map[string]time.Time        // shard id -> when last in the ring (or first missed)
	underSince    map[dbver.Version]time.Time // versions without assignment found under-replicated
	unservedSince map[dbver.Version]time.Time // superseded versions found without a replica, for prune
	pruneErr      string                      // the last pruning error, logged once
}

func newLeaderState() *leaderState {
	return &leaderState{lastSeen: map[string]time.Time{}, underSince: map[dbver.Version]time.Time{}, unservedSince: map[dbver.Version]time.Time{}}
}

// goneFor says how long shard id has been out of the ring, counting from
// when this leader first missed it.
func (s *leaderState) goneFor(id string, now time.Time) time.Duration {
	t, ok := s.lastSeen[id]
	if !ok {
		s.lastSeen[id] = now
		return 0
	}
	return now.Sub(t)
}

// change is one assignment a round wants to commit.
type change struct {
	next  topo.Assignment
	first int // a partition that changes, for the ELECT round
	why   string
}

// round looks at the cluster once and commits what needs to change.
func (c *Coordinator) round(ctx context.Context, l topo.Leadership, st *leaderState) error {
	m := c.opts.Conn.Map()
	now := c.opts.Now()
	// Pins come first: they need nothing of the decision, so a round
	// that cannot decide still publishes them.
	if c.pinsDue(now) {
		if err := c.publishPins(ctx, l, m); err != nil {
			// Not the round's business either: tried again next round.
			c.RefreshPins()
			c.log.Warn("publishing pins failed; trying again next round", zap.Error(err))
		}
	}
	ring, err := c.opts.Coord.Ring(ctx)
	if err != nil {
		return fmt.Errorf("coordinator: reading the ring: %w", err)
	}
	last, err := c.opts.Coord.LastDecision(ctx)
	if err != nil {
		return fmt.Errorf("coordinator: reading the last decision: %w", err)
	}
	as, err := c.opts.Coord.Assignments(ctx)
	if err != nil {
		return fmt.Errorf("coordinator: reading the assignments: %w", err)
	}
	live := ring.ShardIDs()
	for _, id := range live {
		st.lastSeen[id] = now
	}
	if c.opts.PruneAfter > 0 {
		// Not the round's business: its failure is logged and the
		// round goes on.
		err := c.prune(ctx, m, as, st, now)
		switch {
		case err == nil:
			st.pruneErr = ""
		case ctx.Err() != nil:
		case err.Error() != st.pruneErr:
			st.pruneErr = err.Error()
			c.log.Info("pruning superseded versions failed; trying again each round", zap.Error(err))
		}
	}
	changes := c.plan(m, live, ring.Version, as, st, now)
	c.setProgress(m, ring, last, as)
	if len(changes) == 0 {
		return nil
	}
	if last.RingVersion > ring.Version {
		return fmt.Errorf("coordinator: the last decision saw ring version %d, this leader %d", last.RingVersion, ring.Version)
	}
	addrs := ring.Addrs()
	need := c.opts.Quorum.Need(len(addrs))
	for _, ch := range changes {
		votes := c.ask(ctx, addrs, dbver.Of(ch.next.DB, ch.next.Version).Partition(ch.first))
		if err := Count(votes, l.Token(), ring.Version, need); err != nil {
			return fmt.Errorf("coordinator: %s/%s: %w", ch.next.DB, ch.next.Version, err)
		}
	}
	next := make([]topo.Assignment, len(changes))
	for i, ch := range changes {
		next[i] = ch.next
	}
	d, err := c.opts.Coord.Commit(ctx, topo.Fence{Token: l.Token(), Ring: ring, Epoch: last.Epoch}, c.opts.Self.Addr, next)
	if err != nil {
		return fmt.Errorf("coordinator: committing: %w", err)
	}
	for _, ch := range changes {
		c.log.Info("assignment committed", zap.String("db", ch.next.DB), zap.String("version", ch.next.Version),
			zap.String("why", ch.why), zap.Int64("ring_version", ring.Version), zap.Int64("epoch", d.Epoch),
			zap.Int("copies_to_fetch", Pending(ch.next, Published(m, m.Version(ch.next.DB, ch.next.Version)))))
	}
	c.setProgress(m, ring, d, append(as, next...))
	return nil
}

// plan decides, for the served version of every db, whether its
// placement must change: copies of shards gone for RereplicateAfter go
// to live shards, and with the rendezvous strategy a shard that holds
// nothing takes its share.
func (c *Coordinator) plan(m *topo.Map, live []string, ringVersion int64, as []topo.Assignment, st *leaderState, now time.Time) []change {
	byKey := map[dbver.Version]topo.Assignment{}
	for _, a := range as {
		byKey[dbver.Of(a.DB, a.Version)] = a
	}
	r := c.opts.Replication
	var out []change
	for _, db := range m.DBNames() {
		ver := servedVersion(m, db, 1)
		if ver == "" {
			continue
		}
		k := dbver.Of(db, ver)
		v := m.Version(db, ver)
		pub := Published(m, v)
		a, assigned := byKey[k]
		cur := pub
		inForce := pub
		if assigned && len(a.Replicas) == v.NumPartitions {
			cur = a.Replicas
			inForce = InForce(a, pub)
		} else {
			assigned = false
		}
		next, why := cur, ""

		if c.opts.RereplicateAfter > 0 {
			due := false
			var keep []string // gone, but not for long enough yet
			for _, g := range placement.Gone(cur, live) {
				if st.goneFor(g, now) >= c.opts.RereplicateAfter {
					due = true
				} else {
					keep = append(keep, g)
				}
			}
			if !assigned {
				if under(pub, r, len(live)) {
					if st.underSince[k].IsZero() {
						st.underSince[k] = now
					}
					due = due || now.Sub(st.underSince[k]) >= c.opts.RereplicateAfter
				} else {
					delete(st.underSince, k)
				}
			}
			if due {
				next = placement.Repair(cur, live, r, keep...)
				why = "re-replication"
			}
		}
		// With rendezvous, the placement is kept as Rendezvous would make
		// it from itself: stable when nothing changed, a joining shard's
		// share when one joined (also one that loaded the plain ring's
		// share by itself: its surplus copies go). Not while copies are
		// missing: repair comes first.
		if c.opts.Strategy.Name() == (placement.Rendezvous{}).Name() && len(placement.Gone(next, live)) == 0 &&
			!under(next, r, len(live)) && (assigned || !under(pub, r, len(live))) {
			if rb := placement.Rebalance(placement.Trim(next, r), live, r); !placement.Equal(rb, next) {
				next = rb
				why += " rebalance"
			}
		}
		if placement.Equal(next, cur) {
			continue
		}
		first := 0
		for p := range next {
			if !placement.Equal(placement.Placement{next[p]}, placement.Placement{cur[p]}) {
				first = p
				break
			}
		}
		out = append(out, change{
			next: topo.Assignment{
				DB: db, Version: ver, Strategy: c.opts.Strategy.Name(),
				Replicas: next, Previous: inForce,
				RingVersion: ringVersion, Leader: c.opts.Self.Addr, Time: now.UTC(),
			},
			first: first, why: why,
		})
	}
	return out
}

// under reports whether some partition has fewer than
// min(replication, shards) holders.
func under(p placement.Placement, replication, shards int) bool {
	want := min(replication, shards)
	for _, hs := range p {
		if len(hs) < want {
			return true
		}
	}
	return false
}

// assignmentFor returns the assignment of db/version in as, if any.
func assignmentFor(as []topo.Assignment, db, version string) (topo.Assignment, bool) {
	i := slices.IndexFunc(as, func(a topo.Assignment) bool { return a.DB == db && a.Version == version })
	if i < 0 {
		return topo.Assignment{}, false
	}
	return as[i], true
}
