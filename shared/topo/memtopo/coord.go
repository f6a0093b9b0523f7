package memtopo

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"spangle/shared/dbver"
	"spangle/shared/topo"
)

// pollPeriod is how often a waiting candidate or a leadership looks at
// the service again: sessions end inside Server methods that know
// nothing of elections, so waits poll rather than being told.
const pollPeriod = 5 * time.Millisecond

// coordState is the Server's election and decision state.
type coordState struct {
	nextSeq     int64
	election    map[string]electionEntry // by entry name n_<seq>
	decision    topo.Decision
	assignments map[dbver.Version]topo.Assignment
	ringSig     string // the node names Ring last saw
	ringVersion int64  // bumped whenever ringSig changes
	pins        map[string]topo.Pin
}

// electionEntry is an ephemeral sequential election entry.
type electionEntry struct {
	id    string
	owner int64
}

var _ topo.Coordination = (*Conn)(nil)

// coordLocked returns the Server's coordination state, made on first use.
func (s *Server) coordLocked() *coordState {
	if s.coord == nil {
		s.coord = &coordState{election: map[string]electionEntry{}, assignments: map[dbver.Version]topo.Assignment{}}
	}
	return s.coord
}

// sessionAliveLocked reports whether a session is still held by a Conn.
func (s *Server) sessionAliveLocked(session int64) bool {
	if session == 0 {
		return false
	}
	for c := range s.conns {
		if c.session == session && !c.isClosed {
			return true
		}
	}
	return false
}

// liveElectionLocked returns the live election entry names, in order.
func (s *Server) liveElectionLocked() []string {
	st := s.coordLocked()
	var names []string
	for name, e := range st.election {
		if s.sessionAliveLocked(e.owner) {
			names = append(names, name)
		} else {
			delete(st.election, name) // ephemeral: its session is gone
		}
	}
	sort.Strings(names) // n_%019d sorts by sequence
	return names
}

// ringLocked returns the node list, bumping its version on any change.
func (s *Server) ringLocked() topo.Ring {
	st := s.coordLocked()
	names := make([]string, 0, len(s.nodes))
	for name := range s.nodes {
		names = append(names, name)
	}
	sort.Strings(names)
	if sig := strings.Join(names, ","); sig != st.ringSig {
		st.ringSig = sig
		st.ringVersion++
	}
	return topo.Ring{Version: st.ringVersion, Nodes: names}
}

// ready checks that c may talk to the service now. The caller holds s.mu.
func (c *Conn) readyLocked(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memtopo: %w", err)
	}
	if c.isClosed {
		return fmt.Errorf("memtopo: %w", topo.ErrClosed)
	}
	if !c.srv.reachableLocked(c) {
		return fmt.Errorf("memtopo: %w", topo.ErrUnavailable)
	}
	c.srv.ensureSessionLocked(c)
	return nil
}

// Campaign implements topo.Coordination.
func (c *Conn) Campaign(ctx context.Context, id string) (topo.Leadership, error) {
	s := c.srv
	tk := time.NewTicker(pollPeriod)
	defer tk.Stop()
	mine := ""
	for {
		s.mu.Lock()
		if err := c.readyLocked(ctx); err != nil {
			if mine != "" && ctx.Err() != nil {
				delete(s.coordLocked().election, mine)
			}
			s.mu.Unlock()
			return nil, err
		}
		st := s.coordLocked()
		live := s.liveElectionLocked()
		if e, ok := st.election[mine]; !ok || e.owner != c.session {
			st.nextSeq++
			mine = fmt.Sprintf("n_%019d", st.nextSeq)
			st.election[mine] = electionEntry{id: id, owner: c.session}
			live = s.liveElectionLocked()
		}
		if live[0] == mine {
			l := &leadership{c: c, token: mine, session: c.session, lost: make(chan struct{})}
			s.mu.Unlock()
			go l.watch()
			return l, nil
		}
		s.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-c.closed:
		case <-tk.C:
		}
	}
}

// leadership is a won election of a memtopo Conn.
type leadership struct {
	c       *Conn
	token   string
	session int64
	lost    chan struct{}
}

func (l *leadership) Token() string         { return l.token }
func (l *leadership) Lost() <-chan struct{} { return l.lost }

// Resign deletes the election entry.
func (l *leadership) Resign(ctx context.Context) error {
	s := l.c.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := l.c.readyLocked(ctx); err != nil {
		return err
	}
	delete(s.coordLocked().election, l.token)
	return nil
}

// watch closes lost once the entry is gone or its session ended.
func (l *leadership) watch() {
	s := l.c.srv
	tk := time.NewTicker(pollPeriod)
	defer tk.Stop()
	for {
		s.mu.Lock()
		e, ok := s.coordLocked().election[l.token]
		held := ok && e.owner == l.session && s.sessionAliveLocked(l.session)
		s.mu.Unlock()
		if !held {
			close(l.lost)
			return
		}
		<-tk.C
	}
}

// Leader implements topo.Coordination.
func (c *Conn) Leader(ctx context.Context) (string, string, error) {
	s := c.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := c.readyLocked(ctx); err != nil {
		return "", "", err
	}
	live := s.liveElectionLocked()
	if len(live) == 0 {
		return "", "", nil
	}
	return s.coordLocked().election[live[0]].id, live[0], nil
}

// Ring implements topo.Coordination.
func (c *Conn) Ring(ctx context.Context) (topo.Ring, error) {
	s := c.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := c.readyLocked(ctx); err != nil {
		return topo.Ring{}, err
	}
	return s.ringLocked(), nil
}

// LastDecision implements topo.Coordination.
func (c *Conn) LastDecision(ctx context.Context) (topo.Decision, error) {
	s := c.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := c.readyLocked(ctx); err != nil {
		return topo.Decision{}, err
	}
	return s.coordLocked().decision, nil
}

// Assignments implements topo.Coordination.
func (c *Conn) Assignments(ctx context.Context) ([]topo.Assignment, error) {
	s := c.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := c.readyLocked(ctx); err != nil {
		return nil, err
	}
	var out []topo.Assignment
	for _, a := range s.coordLocked().assignments {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].DB != out[j].DB {
			return out[i].DB < out[j].DB
		}
		return out[i].Version < out[j].Version
	})
	return out, nil
}

// Commit implements topo.Coordination: all its checks and writes happen
// under the Server's lock, so they are one atomic step.
func (c *Conn) Commit(ctx context.Context, f topo.Fence, id string, as []topo.Assignment) (topo.Decision, error) {
	for _, a := range as {
		if err := topo.CheckAssignment(a); err != nil {
			return topo.Decision{}, fmt.Errorf("memtopo: %w", err)
		}
	}
	s := c.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := c.readyLocked(ctx); err != nil {
		return topo.Decision{}, err
	}
	st := s.coordLocked()
	live := s.liveElectionLocked()
	if len(live) == 0 || live[0] != f.Token || st.election[f.Token].owner != c.session {
		return topo.Decision{}, fmt.Errorf("memtopo: %w: %s does not lead", topo.ErrFenced, f.Token)
	}
	if ring := s.ringLocked(); ring.Version != f.Ring.Version {
		return topo.Decision{}, fmt.Errorf("memtopo: %w: ring version %d, decided from %d", topo.ErrFenced, ring.Version, f.Ring.Version)
	}
	if st.decision.Epoch != f.Epoch || st.decision.RingVersion > f.Ring.Version {
		return topo.Decision{}, fmt.Errorf("memtopo: %w: decision epoch %d (ring %d), decided from epoch %d (ring %d)",
			topo.ErrFenced, st.decision.Epoch, st.decision.RingVersion, f.Epoch, f.Ring.Version)
	}
	d := topo.Decision{Epoch: st.decision.Epoch + 1, RingVersion: f.Ring.Version, Leader: id, LeaderToken: f.Token, Time: time.Now().UTC()}
	st.decision = d
	for _, a := range as {
		st.assignments[dbver.Of(a.DB, a.Version)] = a
	}
	return d, nil
}

// PruneVersion implements topo.Coordination: the check for replicas and
// the deletions happen under the Server's lock, so a replica published
// at the same moment either comes first and keeps the version, or comes
// after and creates it again.
func (c *Conn) PruneVersion(ctx context.Context, db, version string) (bool, error) {
	if err := topo.CheckVersion(db, version); err != nil {
		return false, fmt.Errorf("memtopo: %w", err)
	}
	s := c.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := c.readyLocked(ctx); err != nil {
		return false, err
	}
	if v, ok := s.versions[db][version]; ok {
		if len(v.replicas) > 0 {
			return false, nil
		}
		delete(s.versions[db], version)
		if len(s.versions[db]) == 0 {
			delete(s.versions, db)
		}
		s.gen++
		s.refreshLocked()
	}
	delete(s.coordLocked().assignments, dbver.Of(db, version))
	return true, nil
}
