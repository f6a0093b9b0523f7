package membership

import (
	"maps"

	"spangle/shared/topo"
)

// pin is Hooks.Pin: the db's pin as the leader published it (pins/<db>).
// It is not known (ok false) while the session is down or before the
// first map: then the node keeps the pin in force.
func (c *Controller) pin(db string) (topo.Pin, bool) {
	m := c.opts.Conn.Map()
	if m.Revision == 0 || !c.opts.Conn.Connected() {
		return topo.Pin{}, false
	}
	return m.PinOf(db), true
}

// Refresher is what Run asks for a scan when a published pin changes:
// the version manager, which follows pins at its scans.
type Refresher interface {
	Refresh()
}

// pinsChanged reports whether m's pins differ from last, and remembers
// them.
func (c *Controller) pinsChanged(m *topo.Map) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if maps.Equal(c.lastPins, m.Pins) {
		return false
	}
	c.lastPins = maps.Clone(m.Pins)
	return true
}

// mayActivateLocked says whether version of db may become active now: while a
// pin is published only the pinned version may (even one older than the
// last activated: the sanctioned step back); otherwise only versions not
// older than the last one activated.
func (c *Controller) mayActivateLocked(m *topo.Map, db, version string) (ok, stale bool) {
	if p := m.PinOf(db).Version; p != "" {
		return version == p, false
	}
	if last := c.lastActive[db]; last != "" && version < last {
		return false, true
	}
	return true, false
}
