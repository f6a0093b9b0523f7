package retry

import (
	"errors"
	"time"

	"spangle/shared/source"
	"spangle/storaged/loader"
)

// Default bounds of the pause before a version that failed with a
// transient error is loaded again (versions.Options.RetryMin, RetryMax).
const (
	DefaultMin = time.Second
	DefaultMax = 5 * time.Minute
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

// Delay is the pause after the n-th transient failure in a row (n >= 1):
// lo doubling up to hi.
func Delay(n int, lo, hi time.Duration) time.Duration {
	d := lo
	for i := 1; i < n && d < hi; i++ {
		d *= 2
	}
	return min(d, hi)
}

// Backoff is the retry state of one version: the zero value is a version
// failed by its data (or not failed), never retried with the same files.
type Backoff struct {
	// Failures counts the loads in a row that failed with a transient
	// error (same files).
	Failures int
	// At, set after one, is when a scan loads the version again.
	At time.Time
}

// Fail counts one more transient failure at now and returns the pause
// before the version is loaded again, between lo and hi.
func (b *Backoff) Fail(now time.Time, lo, hi time.Duration) time.Duration {
	b.Failures++
	d := Delay(b.Failures, lo, hi)
	b.At = now.Add(d)
	return d
}

// Scheduled reports whether a retry is scheduled at all: false for a
// version failed by its data.
func (b Backoff) Scheduled() bool { return !b.At.IsZero() }

// Left returns how long until the retry is due at now; zero or less once
// it is.
func (b Backoff) Left(now time.Time) time.Duration { return b.At.Sub(now) }
