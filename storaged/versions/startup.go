package versions

import "sync/atomic"

// A node that restarts reopens the versions its local store holds
// complete: quick, but not instant, and its listener is open meanwhile.
// Until those versions answer, a lookup the node cannot answer is not
// "no such db" (404) nor "version not held" (410), which readers and
// routers take as facts about the db, but "not ready yet" (503 with
// Retry-After), which they retry elsewhere or later. Ready says when the
// node is past that: the first scan is over, and each version it started
// to reopen from the local store answers (active; with Hooks.Gated,
// loaded and either active or waiting for the cluster for longer than
// FallbackAfter), failed, or was given up.

// startup tracks the versions the first scan reopens from the local
// store. Guarded by Manager.mu, except ready.
type startup struct {
	scanned bool             // the first scan is over
	opening map[*vstate]bool // versions reopened by it, until they answer
	ready   atomic.Bool      // set once Ready returned true
}

// track notes that vs, complete in the local store, is being reopened
// by the first scan.
func (s *startup) track(vs *vstate) {
	if s.scanned {
		return
	}
	if s.opening == nil {
		s.opening = map[*vstate]bool{}
	}
	s.opening[vs] = true
}

// Ready reports whether the versions the local store held complete at
// the start are open and answering (see above). Once true it stays true;
// until then it takes the manager's lock.
func (m *Manager) Ready() bool {
	if m.start.ready.Load() {
		return true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.start.scanned {
		return false
	}
	now := m.opts.Now()
	for vs := range m.start.opening {
		switch {
		case vs.phase == loaded && m.opts.Hooks.Gated && now.Sub(vs.loadedAt) >= m.opts.FallbackAfter:
		case vs.phase == building || vs.phase == activateOnLoad || vs.phase == loaded:
			return false
		}
		delete(m.start.opening, vs)
	}
	m.start.ready.Store(true)
	return true
}
