package proxy

import (
	"context"
	"sync"
	"time"
)

// inlineCtx is the context of a lookup's first attempt, which Do runs on
// the caller's goroutine. A connection waits on it without
// context.AfterFunc, which per lookup costs several allocations and two
// lock round trips on the lookup's context (about 6% of routerd's CPU
// per uncached GET): the attempt's connection is kept here instead, and
// the lookup interrupts it when it gives up on the attempt (another
// replica answered, the deadline passed, or the caller went away). The
// caller's going away is seen by the lookup once the attempt outlives
// its stage, so a first attempt's connection outlives the caller by at
// most a stage; everything else about the context (Done, Err, Cause) is
// the lookup's. It is safe for concurrent use.
type inlineCtx struct {
	context.Context // the lookup's

	mu    sync.Mutex
	conn  deadliner // guarded by mu; the connection the attempt waits on
	fired bool      // guarded by mu; set by interrupt
}

type deadliner interface{ SetDeadline(time.Time) error }

// hold makes interrupt wake c; false when the lookup already gave up
// (the caller then watches the context itself).
func (a *inlineCtx) hold(c deadliner) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.fired {
		return false
	}
	a.conn = c
	return true
}

// release ends hold; false when interrupt ran meanwhile and may have
// set the connection's deadline, as context.AfterFunc's stop says.
func (a *inlineCtx) release() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.conn = nil
	return !a.fired
}

// interrupt wakes the held connection, at once and for good: called
// once the lookup's context is cancelled.
func (a *inlineCtx) interrupt() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.fired = true
	if a.conn != nil {
		a.conn.SetDeadline(aLongTimeAgo)
	}
}

// watch wakes c's reader and writer once ctx ends; stop ends the watch
// and reports false when it may have fired (the connection's deadline
// may then be set).
func watch(ctx context.Context, c deadliner) (stop func() bool) {
	if a, ok := ctx.(*inlineCtx); ok && a.hold(c) {
		return a.release
	}
	return context.AfterFunc(ctx, func() { c.SetDeadline(aLongTimeAgo) })
}
