package versions

import "time"

// scans says when the manager's next scan is due: at once (kick), or
// after a delay, for files that may have settled, a retry's backoff or
// a fallback's wait (after). Run scans whenever due delivers. The timer
// is guarded by Manager.mu; kick needs no lock.
type scans struct {
	due   chan struct{} // buffered, 1: a scan is due
	timer *time.Timer   // the delayed scan, if any
	at    time.Time     // when timer fires
}

// kick asks for a scan soon, as Refresh does, but without retrying failed
// versions before their backoff is over: the manager's own re-scans.
func (s *scans) kick() {
	select {
	case s.due <- struct{}{}:
	default:
	}
}

// after asks for a scan in d, or sooner if one is due sooner. Called
// with Manager.mu held.
func (s *scans) after(d time.Duration) {
	at := time.Now().Add(d)
	if s.timer != nil && !s.at.After(at) && s.at.After(time.Now()) {
		return
	}
	if s.timer != nil {
		s.timer.Stop()
	}
	s.at = at
	s.timer = time.AfterFunc(d, s.kick)
}

// stop cancels the delayed scan. Called with Manager.mu held.
func (s *scans) stop() {
	if s.timer != nil {
		s.timer.Stop()
	}
}
