package versions

import (
	"context"
	"strconv"
	"time"

	"go.uber.org/zap"

	"spangle/shared/source"
	"spangle/storaged/loader"
	"spangle/storaged/retry"
)

// phase is where a version is in its lifecycle (doc.go draws it). A
// version has exactly one; it changes only through Manager.toLocked, and
// only along an edge of phase.next.
type phase int

const (
	// none: not yet known to the manager (a vstate being made).
	none phase = iota
	// building: its load runs.
	building
	// activateOnLoad: its load runs, and Activate came first: it becomes
	// active once loaded.
	activateOnLoad
	// cancelling: its load runs but was cancelled (superseded, its files
	// changed, its db left the source, shutdown); it is forgotten when
	// the load returns.
	cancelling
	// loaded: servable, waiting for Activate (Hooks.Gated); it answers
	// pinned requests.
	loaded
	// active: the db's active version, the answer to unpinned requests.
	active
	// superseded: replaced, answering pinned requests until it has been
	// unused for the retention period.
	superseded
	// retiring: its removal began; Hooks.BeforeRemove runs while it still
	// answers pinned requests.
	retiring
	// removing: out of the snapshot; closed once unused, then deleted.
	removing
	// failed: its load, or the listing of its files, failed; kept to show
	// the reason until a scan no longer wants it.
	failed
	// gone: out of the manager's map. Goroutines still holding the vstate
	// find it stale.
	gone
)

func (p phase) String() string {
	switch p {
	case none:
		return "none"
	case building:
		return "building"
	case activateOnLoad:
		return "activate-on-load"
	case cancelling:
		return "cancelling"
	case loaded:
		return "loaded"
	case active:
		return "active"
	case superseded:
		return "superseded"
	case retiring:
		return "retiring"
	case removing:
		return "removing"
	case failed:
		return "failed"
	case gone:
		return "gone"
	}
	return "phase(" + strconv.Itoa(int(p)) + ")"
}

// phases is a set of phases, one bit each.
type phases uint32

func setOf(ps ...phase) phases {
	var s phases
	for _, p := range ps {
		s |= 1 << p
	}
	return s
}

// next is the lifecycle's table of transitions: the phases p may move to,
// each with its event as doc.go's diagram names it.
func (p phase) next() phases {
	switch p {
	case none:
		return setOf(building, failed) // scan, unlistable
	case building:
		return setOf(activateOnLoad, cancelling, loaded, failed) // early Activate, cancel, load done, load failed
	case activateOnLoad:
		return setOf(cancelling, loaded, failed) // cancel, load done, load failed
	case cancelling:
		return setOf(gone) // load returned
	case loaded:
		return setOf(active, retiring) // activate, remove
	case active:
		return setOf(superseded, retiring) // another activated, remove
	case superseded:
		return setOf(active, retiring) // activate, remove
	case retiring:
		return setOf(removing) // unpublished
	case removing:
		return setOf(gone) // deleted
	case failed:
		return setOf(gone) // forgotten
	}
	return 0
}

// may reports whether the table allows p to move to q.
func (p phase) may(q phase) bool { return q >= 0 && p.next()&(1<<q) != 0 }

// loading: a load goroutine runs for the version.
func (p phase) loading() bool { return p == building || p == activateOnLoad || p == cancelling }

// servable: the version is loaded and neither leaving nor gone; it may be
// activated, repaired, given partitions or removed.
func (p phase) servable() bool { return p == loaded || p == active || p == superseded }

// leaving: the version is on its way out; a scan that wants it again
// loads it again once it is gone (vstate.reload).
func (p phase) leaving() bool { return p == cancelling || p == retiring || p == removing }

// toLocked moves vs to next: the one place a version changes phase. A
// move the table (phase.next) does not allow is a bug; it is logged at
// DPanic level, which panics under a development logger (as in this
// package's tests), and vs keeps its phase.
func (m *Manager) toLocked(db string, vs *vstate, next phase) bool {
	if !vs.phase.may(next) {
		m.log.DPanic("versions: illegal version state transition", zap.String("db", db),
			zap.String("version", vs.name), zap.Stringer("from", vs.phase), zap.Stringer("to", next))
		return false
	}
	vs.phase = next
	return true
}

// cancelLocked cancels the load of vs, if it runs and is not cancelled
// already.
func (m *Manager) cancelLocked(db string, vs *vstate) {
	if (vs.phase == building || vs.phase == activateOnLoad) && m.toLocked(db, vs, cancelling) {
		vs.cancel()
	}
}

// forgetLocked drops vs from d, a failed or a finished version.
func (m *Manager) forgetLocked(db string, d *dbState, vs *vstate) {
	m.toLocked(db, vs, gone)
	if d != nil && d.versions[vs.name] == vs {
		delete(d.versions, vs.name)
	}
}

// vstate is what the manager knows of one version. Guarded by Manager.mu.
type vstate struct {
	name   string
	phase  phase
	reason string
	// cause: why it failed; reason adds when it is retried.
	cause string
	// retry is its backoff after loads in a row failed with a transient
	// error (same files; retry.go); zero for a version failed by its data.
	retry  retry.Backoff
	files  []source.File
	v      *Version           // set once servable
	cancel context.CancelFunc // set while loading
	// reload: a scan wanted it while it was leaving (its files changed,
	// or the source went back to it); a scan runs again once it is gone,
	// to load it anew. It is not a phase: it rides along whichever of
	// cancelling, retiring and removing the version is in.
	reload bool
	// Whether it is being built again because its source files changed
	// after it became servable is storaged/reload's (Manager.reload).
	started  time.Time
	loadTook time.Duration // how long building took; 0 when reused
	// progress counts what its load has read so far (set while loading).
	progress *loader.Progress
	// local: the local store held it complete when its load started;
	// reopening it does not wait for a build slot (buildQueue).
	local     bool
	loadedAt  time.Time // when it was loaded
	activated time.Time // when it last became the current version
	// durable is closed once the version's load is over, its files
	// synced and its manifest written; only then may it be deleted.
	durable chan struct{}
}
