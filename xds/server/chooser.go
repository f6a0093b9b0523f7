package server

import (
	"sync"

	"spangle/shared/topo"
)

// VersionChooser says which version of each db Envoy routes to. routerd
// passes its own, so that Envoy and routerd answer from the same version;
// NewestComplete serves when xds runs alone.
//
// Served must never go back: once it has returned version v for a db, it
// never returns an older one for it, so that an Envoy never gets routes to
// older data than it had. It is called from one goroutine at a time.
type VersionChooser interface {
	// Served returns db -> version for the dbs Envoy should route.
	Served(m *topo.Map) map[string]string
}

// NewestComplete chooses, per db, the newest version that is complete
// (every partition has MinReplication live replicas), and keeps it until
// a newer one is complete, even if it becomes incomplete meanwhile. It is
// safe for concurrent use.
type NewestComplete struct {
	minReplication int

	mu     sync.Mutex
	served map[string]string // guarded by mu; the floor of each db, kept while the db is gone
}

// NewNewestComplete returns a chooser needing minReplication replicas per
// partition (at least 1).
func NewNewestComplete(minReplication int) *NewestComplete {
	return &NewestComplete{minReplication: minReplication, served: map[string]string{}}
}

// Served implements VersionChooser. A db that has left the map is not
// routed, but its floor is remembered: should it come back with older
// versions only, those are not served either.
func (c *NewestComplete) Served(m *topo.Map) map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]string{}
	for db := range m.DBs {
		if v := m.NewestComplete(db, c.minReplication); v > c.served[db] {
			c.served[db] = v
		}
		if v := c.served[db]; v != "" {
			out[db] = v
		}
	}
	return out
}
