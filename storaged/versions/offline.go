package versions

import (
	"sync"
	"time"

	"go.uber.org/zap"

	"spangle/shared/dbver"
	"spangle/storaged/planner"
)

// sourceHealth is the outcome of the last listing of the source root, for
// the status page and /healthz. Its methods are safe for concurrent use.
type sourceHealth struct {
	mu    sync.Mutex // guards err and since
	err   string     // "" while the source lists
	since time.Time  // when listing began to fail
}

func (s *sourceHealth) set(err error, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil {
		s.err, s.since = "", time.Time{}
		return
	}
	if s.err == "" {
		s.since = now
	}
	s.err = err.Error()
}

// sourceDown records a failed listing of the source. While the manager
// serves nothing yet (a start with the source unreachable), it serves the
// newest version of each db that is complete in the local store, so that
// no db goes dark because the source is down; the next scan that lists
// the source takes over from there.
func (m *Manager) sourceDown(err error) {
	m.source.set(err, m.opts.Now())
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.dbs) > 0 {
		return
	}
	local, lerr := m.opts.Store.List()
	if lerr != nil {
		m.log.Error("listing the local store failed", zap.Error(lerr))
		return
	}
	for db, names := range local {
		for i := len(names) - 1; i >= 0; i-- {
			man, err := m.opts.Store.ReadManifest(dbver.Of(db, names[i]))
			if err != nil || !man.Complete || len(man.Files) == 0 {
				continue
			}
			m.log.Info("source unreachable; serving the version complete in the local store",
				zap.String("db", db), zap.String("version", names[i]))
			m.considerLocked(db, planner.Plan{
				Target: &planner.Candidate{Name: names[i], Files: man.Files, Local: true},
				Listed: map[string]bool{names[i]: true},
			})
			break
		}
	}
	m.publishLocked()
}
