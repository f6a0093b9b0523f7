package versions

import (
	"context"
	"slices"
	"sync"
	"time"

	"spangle/storaged/builder"
)

// ahead is a version's build started before the cluster decided which of
// its partitions this node holds (Hooks.Guess), during the wait for the
// node list to converge. At a start every node waits time_to_converge
// before deciding anything, and with many dbs the builds after it were
// most of the start: built during the wait, they are done sooner. The
// build writes the version's local copy as any build does (a manifest
// that is not complete until makeDurable, so a crash meanwhile leaves
// nothing that a restart would reuse), publishes nothing, and is kept
// only if the decision names the same partitions; otherwise it is
// cancelled, and the version is built again for the decided partitions
// (Build removes what the guess left).
type ahead struct {
	cancel context.CancelFunc
	done   chan struct{} // closed once the build (if any) returned

	mu       sync.Mutex
	building []int // guarded by mu; the partitions being built, once started

	// Set before done closes.
	opened builder.Opened
	err    error
	took   time.Duration
}

// buildAhead starts building db/vs's guessed partitions (of n) in the
// background, behind the build queue as any build.
func (m *Manager) buildAhead(ctx context.Context, db string, vs *vstate, n int) *ahead {
	ctx, cancel := context.WithCancel(ctx)
	a := &ahead{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(a.done)
		if _, ok := m.opts.Hooks.Guess(ctx, db, vs.name, n); !ok {
			return
		}
		release, err := m.queue.acquire(ctx, m.opts.Hooks.buildOrder(db))
		if err != nil {
			return
		}
		defer release()
		// Guessed again now that it builds: the node list may have
		// changed while it waited its turn.
		guess, ok := m.opts.Hooks.Guess(ctx, db, vs.name, n)
		if !ok {
			return
		}
		var copyable func(p int) bool
		if f := m.opts.Hooks.PeerServed; f != nil {
			served := map[int]bool{}
			for _, p := range guess {
				if f(db, vs.name, p) {
					served[p] = true
				}
			}
			copyable = func(p int) bool { return served[p] }
		}
		start := time.Now()
		a.mu.Lock()
		a.building = guess
		a.mu.Unlock()
		a.opened, a.err = m.build.Build(ctx, db, vs.name, vs.files, guess, copyable, vs.progress)
		a.took = time.Since(start)
	}()
	return a
}

// take returns the build ahead when the decision (held, or err) names
// the partitions it is building, once it is done; ok false otherwise,
// once it stopped and closed what it opened: the version is then built
// as if nothing had been built ahead. A build ahead not started yet is
// cancelled: the version waits its turn in the queue again, with the
// same key.
func (a *ahead) take(held []int, err error) (o builder.Opened, buildErr error, took time.Duration, ok bool) {
	a.mu.Lock()
	building := a.building
	a.mu.Unlock()
	keep := err == nil && building != nil && slices.Equal(building, held)
	if !keep {
		a.cancel()
	}
	<-a.done
	if keep {
		return a.opened, a.err, a.took, true
	}
	for _, p := range a.opened.Parts {
		if p != nil {
			p.Close()
		}
	}
	return builder.Opened{}, nil, 0, false
}
