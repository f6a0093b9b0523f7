package dbremoval

import (
	"context"
	"errors"
	"sync"
	"testing"
)

// hook answers each call with what the test sends on answers, and counts
// the calls.
type hook struct {
	mu      sync.Mutex
	calls   int
	answers chan error // nil: done; errNotYet: not done; else the error
}

var errNotYet = errors.New("not yet")

func (h *hook) call(ctx context.Context, db string) (bool, error) {
	h.mu.Lock()
	h.calls++
	h.mu.Unlock()
	err := <-h.answers
	if errors.Is(err, errNotYet) {
		return false, nil
	}
	return err == nil, err
}

func (h *hook) n() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.calls
}

// The hook runs only once nothing of the db is left; a sweep tries a db
// once, a scan again until the hook says done; then the db is forgotten.
func TestHookAfterWithdrawalUntilDone(t *testing.T) {
	h := &hook{answers: make(chan error, 1)}
	var wg sync.WaitGroup
	tr := New(h.call, nil, &wg)
	tr.Removed("db")
	left := true
	empty := func(string) bool { return !left }
	ctx := context.Background()

	tr.Check(ctx, nil, false, empty)
	wg.Wait()
	if h.n() != 0 {
		t.Fatal("the hook ran while a version of the db was left")
	}
	left = false
	h.answers <- errNotYet
	tr.Check(ctx, nil, false, empty)
	wg.Wait()
	if h.n() != 1 {
		t.Fatalf("%d calls after the last version went, want 1", h.n())
	}
	tr.Check(ctx, nil, false, empty) // a sweep: tried once already
	wg.Wait()
	if h.n() != 1 {
		t.Fatalf("a sweep called the hook again (%d calls)", h.n())
	}
	h.answers <- errors.New("zookeeper away")
	tr.Check(ctx, map[string]bool{}, true, empty) // a scan: again
	wg.Wait()
	h.answers <- nil
	tr.Check(ctx, map[string]bool{}, true, empty)
	wg.Wait()
	if h.n() != 3 {
		t.Fatalf("%d calls after two scans, want 3", h.n())
	}
	tr.Check(ctx, map[string]bool{}, true, empty) // done: forgotten
	wg.Wait()
	if h.n() != 3 {
		t.Fatalf("the hook ran after it reported the db done (%d calls)", h.n())
	}
}

// A db the source lists again is forgotten, also when it comes back while
// a call runs; nothing is called twice at once.
func TestListedAgain(t *testing.T) {
	h := &hook{answers: make(chan error)}
	var wg sync.WaitGroup
	tr := New(h.call, nil, &wg)
	empty := func(string) bool { return true }
	ctx := context.Background()

	tr.Removed("db")
	tr.Check(ctx, map[string]bool{"db": true}, true, empty)
	wg.Wait()
	if h.n() != 0 {
		t.Fatal("the hook ran for a db listed again")
	}

	tr.Removed("db")
	tr.Check(ctx, map[string]bool{}, true, empty) // the call blocks on answers
	tr.Check(ctx, map[string]bool{"db": true}, true, empty)
	tr.Check(ctx, map[string]bool{}, true, empty) // still running: not a second call
	h.answers <- errNotYet
	wg.Wait()
	tr.Check(ctx, map[string]bool{}, true, empty)
	wg.Wait()
	if h.n() != 1 {
		t.Fatalf("%d calls, want 1: the db came back during the call and is forgotten", h.n())
	}
}

// Standalone (no hook) the Tracker is nil and does nothing.
func TestNoHook(t *testing.T) {
	tr := New(nil, nil, &sync.WaitGroup{})
	if tr != nil {
		t.Fatal("a Tracker without a hook")
	}
	tr.Removed("db")
	tr.Check(context.Background(), nil, true, func(string) bool { t.Fatal("empty called"); return true })
}
