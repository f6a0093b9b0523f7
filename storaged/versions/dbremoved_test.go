package versions

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"spangle/shared/wire"
)

// dbRemovedHooks records the calls of BeforeRemove and DBRemoved in
// order, and answers DBRemoved from a script.
type dbRemovedHooks struct {
	mu      sync.Mutex
	events  []string
	calls   int
	answers []error // nil: done; errNotDone: false, nil
	release chan struct{}
	local   func() bool // whether the removed db still has local data
}

var errNotDone = errors.New("test: the cluster still holds some of it")

func (r *dbRemovedHooks) hooks() Hooks {
	return Hooks{
		BeforeRemove: func(db, version string, _ []int) {
			time.Sleep(50 * time.Millisecond) // a slow withdrawal
			r.mu.Lock()
			defer r.mu.Unlock()
			r.events = append(r.events, "withdrawn "+db+"/"+version)
		},
		DBRemoved: func(ctx context.Context, db string) (bool, error) {
			r.mu.Lock()
			i := r.calls
			r.calls++
			ev := "removed " + db
			if r.local() {
				ev += " with local data left"
			}
			r.events = append(r.events, ev)
			var answer error
			if i < len(r.answers) {
				answer = r.answers[i]
			}
			r.mu.Unlock()
			if i == 0 {
				select {
				case <-r.release:
				case <-ctx.Done():
					return false, ctx.Err()
				}
			}
			if errors.Is(answer, errNotDone) {
				return false, nil
			}
			return answer == nil, answer
		},
	}
}

func (r *dbRemovedHooks) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls
}

// TestDBRemovedHook: DBRemoved is called for a db removed from the
// source only after BeforeRemove has withdrawn each of its versions and
// its local data is gone; a call that blocks does not hold up the
// manager; an error or false calls it again at the next scan, not
// before, and true ends the calls. A db listed again is not called for.
func TestDBRemovedHook(t *testing.T) {
	root, storeDir := t.TempDir(), t.TempDir()
	writeV(t, root, "db", "v1")
	writeV(t, root, "other", "v1")
	writeV(t, root, "keep", "v1")
	r := &dbRemovedHooks{
		answers: []error{errors.New("test: coordination service unavailable"), errNotDone, nil},
		release: make(chan struct{}),
		local: func() bool {
			_, err := os.Stat(filepath.Join(storeDir, "db"))
			return err == nil
		},
	}
	h := start(t, root, storeDir, func(o *Options) {
		o.Retention = 20 * time.Millisecond // a sweep every 5ms
		o.Hooks = r.hooks()
	})
	for _, db := range []string{"db", "other", "keep"} {
		h.waitState(db, "v1", wire.StateActive)
	}
	ctx := context.Background()

	os.RemoveAll(filepath.Join(root, "db"))
	h.m.Scan(ctx)
	waitFor(t, "DBRemoved called", func() bool { return r.count() == 1 })
	r.mu.Lock()
	if want := []string{"withdrawn db/v1", "removed db"}; !slices.Equal(r.events, want) {
		t.Errorf("events %q, want %q", r.events, want)
	}
	r.mu.Unlock()
	// The call blocks: the manager goes on.
	writeV(t, root, "keep", "v2")
	h.m.Scan(ctx)
	h.waitState("keep", "v2", wire.StateActive)
	if n := r.count(); n != 1 {
		t.Fatalf("%d calls while the first blocks, want 1", n)
	}
	close(r.release) // it fails
	time.Sleep(100 * time.Millisecond)
	if n := r.count(); n != 1 {
		t.Fatalf("%d calls before the next scan, want 1", n)
	}
	h.m.Scan(ctx) // not done yet
	waitFor(t, "the second call", func() bool { return r.count() == 2 })
	h.m.Scan(ctx) // done
	waitFor(t, "the third call", func() bool { return r.count() == 3 })
	time.Sleep(20 * time.Millisecond)
	h.m.Scan(ctx)
	time.Sleep(100 * time.Millisecond)
	if n := r.count(); n != 3 {
		t.Fatalf("%d calls after DBRemoved reported done, want 3", n)
	}

	// A db listed again before the hook is done with it is forgotten.
	r.mu.Lock()
	r.answers = append(r.answers, errNotDone, nil)
	r.mu.Unlock()
	writeV(t, root, "db", "v2")
	h.m.Scan(ctx)
	h.waitState("db", "v2", wire.StateActive)
	os.RemoveAll(filepath.Join(root, "db"))
	h.m.Scan(ctx)
	waitFor(t, "the call after the second removal", func() bool { return r.count() == 4 })
	writeV(t, root, "db", "v3")
	h.m.Scan(ctx)
	h.waitState("db", "v3", wire.StateActive)
	h.m.Scan(ctx)
	time.Sleep(100 * time.Millisecond)
	if n := r.count(); n != 4 {
		t.Fatalf("%d calls for a db listed again, want 4", n)
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ev := range r.events {
		if ev == "removed db with local data left" {
			t.Errorf("DBRemoved called before the local data was deleted: %q", r.events)
		}
	}
	if slices.Contains(r.events, "removed other") || slices.Contains(r.events, "removed keep") {
		t.Errorf("DBRemoved called for a db still listed: %q", r.events)
	}
}
