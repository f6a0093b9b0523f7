package memtopo

import (
	"context"
	"fmt"

	"spangle/shared/topo"
)

// SetPin implements topo.Coordination: the leadership and generation
// checks and the write happen under the Server's lock, as one step.
func (c *Conn) SetPin(ctx context.Context, token, db string, p topo.Pin) error {
	if err := topo.CheckPin(db, p); err != nil {
		return fmt.Errorf("memtopo: %w", err)
	}
	s := c.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := c.readyLocked(ctx); err != nil {
		return err
	}
	st := s.coordLocked()
	live := s.liveElectionLocked()
	if len(live) == 0 || live[0] != token || st.election[token].owner != c.session {
		return fmt.Errorf("memtopo: %w: %s does not lead", topo.ErrFenced, token)
	}
	if old, ok := st.pins[db]; ok && old.Generation >= p.Generation {
		return fmt.Errorf("memtopo: %w: pin of %s at generation %d, not above %d", topo.ErrFenced, db, p.Generation, old.Generation)
	}
	if st.pins == nil {
		st.pins = map[string]topo.Pin{}
	}
	st.pins[db] = p
	s.gen++
	s.refreshLocked()
	return nil
}
