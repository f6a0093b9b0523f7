package versions

import (
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"spangle/shared/source"
	"spangle/storaged/loader"
)

// Default bounds of the pause before a version that failed with a
// transient error is loaded again (Options.RetryMin, RetryMax).
const (
	DefaultRetryMin = time.Second
	DefaultRetryMax = 5 * time.Minute
)

// Transient reports whether a load failed for a reason outside the data:
// the source was unreachable or cut off (source.ErrUnavailable), an object
// changed while it was read (source.ErrChanged), or the local store could
// not be written (loader.ErrLocal). Such a version is loaded again after a
// backoff with the same files. Anything else (a corrupt SequenceFile, an
// unsupported codec, a file unreadable by rule, a partition count the
// cluster refuses) is in the data: the version stays failed until its
// files change.
func Transient(err error) bool {
	return errors.Is(err, source.ErrUnavailable) || errors.Is(err, source.ErrChanged) || errors.Is(err, loader.ErrLocal)
}

// retryDelay is the pause after the n-th transient failure in a row (n
// >= 1): lo doubling up to hi.
func retryDelay(n int, lo, hi time.Duration) time.Duration {
	d := lo
	for i := 1; i < n && d < hi; i++ {
		d *= 2
	}
	return min(d, hi)
}

// retryLaterLocked schedules the next load of vs, failed with a
// transient error: retries counts the failures in a row, and a scan at
// or after retryAt (or any scan Refresh asked for) loads it again.
func (m *Manager) retryLaterLocked(vs *vstate) {
	vs.retries++
	d := retryDelay(vs.retries, m.opts.RetryMin, m.opts.RetryMax)
	vs.retryAt = m.opts.Now().Add(d)
	vs.reason = fmt.Sprintf("%s (a transient error: retry %d in %s, or at the next refresh)", vs.cause, vs.retries, d)
	m.rescanLocked(d)
}

// retryDueLocked reports whether a scan should load a failed vs again
// although its files are the same: it failed with a transient error and
// its backoff is over, or the scan was asked for by Refresh. A retry not
// due yet gets a scan when it is.
func (m *Manager) retryDueLocked(vs *vstate) bool {
	if vs.retryAt.IsZero() {
		return false // bad data stays bad
	}
	if m.forceRetry {
		return true
	}
	left := vs.retryAt.Sub(m.opts.Now())
	if left <= 0 {
		return true
	}
	m.rescanLocked(left)
	return false
}

// armRetriesLocked runs after each scan. A retry that was due but was not
// started by the scan (the source could not be listed: it is still down)
// counts as another failure and backs off further; every retry pending
// gets a scan when it is due.
func (m *Manager) armRetriesLocked() {
	now := m.opts.Now()
	for db, d := range m.dbs {
		for _, vs := range d.versions {
			if vs.phase != failed || vs.retryAt.IsZero() {
				continue
			}
			if !vs.retryAt.After(now) {
				m.log.Info("source still unavailable; retrying the version later", zap.String("db", db), zap.String("version", vs.name))
				m.retryLaterLocked(vs)
				continue
			}
			m.rescanLocked(vs.retryAt.Sub(now))
		}
	}
}

// kick asks for a scan soon, as Refresh does, but without retrying failed
// versions before their backoff is over: the manager's own re-scans.
func (m *Manager) kick() {
	select {
	case m.refresh <- struct{}{}:
	default:
	}
}
