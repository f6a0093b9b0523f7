package versions

import (
	"fmt"

	"go.uber.org/zap"
)

// retryLaterLocked schedules the next load of vs, failed with a
// transient error (storaged/retry): a scan at or after its backoff (or
// any scan Refresh asked for) loads it again.
func (m *Manager) retryLaterLocked(vs *vstate) {
	d := vs.retry.Fail(m.opts.Now(), m.opts.RetryMin, m.opts.RetryMax)
	vs.reason = fmt.Sprintf("%s (a transient error: retry %d in %s, or at the next refresh)", vs.cause, vs.retry.Failures, d)
	m.scans.after(d)
}

// retryDueLocked reports whether a scan should load a failed vs again
// although its files are the same: it failed with a transient error and
// its backoff is over, or the scan was asked for by Refresh. A retry not
// due yet gets a scan when it is.
func (m *Manager) retryDueLocked(vs *vstate) bool {
	if !vs.retry.Scheduled() {
		return false // bad data stays bad
	}
	if m.forceRetry {
		return true
	}
	left := vs.retry.Left(m.opts.Now())
	if left <= 0 {
		return true
	}
	m.scans.after(left)
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
			if vs.phase != failed || !vs.retry.Scheduled() {
				continue
			}
			if vs.retry.Left(now) <= 0 {
				m.log.Info("source still unavailable; retrying the version later", zap.String("db", db), zap.String("version", vs.name))
				m.retryLaterLocked(vs)
				continue
			}
			m.scans.after(vs.retry.Left(now))
		}
	}
}
