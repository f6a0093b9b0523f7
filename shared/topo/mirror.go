package topo

import (
	"context"
	"sync"
)

// Mirror holds the latest Map and wakes those waiting for a newer one.
// Backends embed it to implement Watcher. It is safe for concurrent use.
type Mirror struct {
	mu      sync.Mutex
	cur     *Map          // guarded by mu
	changed chan struct{} // guarded by mu; closed when cur is replaced
}

// NewMirror returns a Mirror holding the empty map at revision 0.
func NewMirror() *Mirror {
	return &Mirror{cur: EmptyMap(), changed: make(chan struct{})}
}

// Map returns the latest map.
func (m *Mirror) Map() *Map {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cur
}

// Publish makes next the latest map. It sets next.Revision to one past the
// previous map's, so callers need not track revisions.
func (m *Mirror) Publish(next *Map) {
	m.mu.Lock()
	defer m.mu.Unlock()
	next.Revision = m.cur.Revision + 1
	m.cur = next
	close(m.changed)
	m.changed = make(chan struct{})
}

// Wait blocks until the map's revision is greater than after.
func (m *Mirror) Wait(ctx context.Context, after uint64) (*Map, error) {
	for {
		m.mu.Lock()
		cur, ch := m.cur, m.changed
		m.mu.Unlock()
		if cur.Revision > after {
			return cur, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
