package reload

import (
	"context"
	"sync"
	"testing"
	"time"

	"spangle/shared/dbver"
	"spangle/shared/source"
)

// host runs each rebuild until its context ends or release says how it
// ends, as the version manager would: Current checked, then Finish.
type host struct {
	started chan *Job
	release chan bool // true: the rebuild fails
}

func (h *host) Rebuild(_, ctx context.Context, j *Job) {
	h.started <- j
	select {
	case <-ctx.Done():
	case failed := <-h.release:
		if j.Current() {
			j.Finish(failed)
		}
	}
}

func files(names ...string) []source.File {
	var out []source.File
	for _, n := range names {
		out = append(out, source.File{Name: n, Size: 1})
	}
	return out
}

func wait(t *testing.T, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("a job never ended")
	}
}

func TestStartStopAndFailures(t *testing.T) {
	var wg sync.WaitGroup
	h := &host{started: make(chan *Job, 4), release: make(chan bool)}
	r := New(h, &wg)
	v := dbver.Of("db", "v1")
	ctx := context.Background()

	a, _ := r.Start(ctx, v, files("a"), 2, []int{0, 1}, false)
	if a == nil || <-h.started != a || !r.Pending(v) {
		t.Fatal("a rebuild did not start")
	}
	if j, _ := r.Start(ctx, v, files("a"), 2, []int{0, 1}, false); j != nil {
		t.Fatal("the same files started a second rebuild")
	}
	// Files that change again replace the job; the new one waits for the old.
	b, replaced := r.Start(ctx, v, files("b"), 2, []int{0, 1}, false)
	if b == nil || replaced != a {
		t.Fatalf("changed files: started %v, replaced %v", b, replaced)
	}
	wait(t, a.Done())
	if a.Current() || !b.Current() || <-h.started != b {
		t.Fatal("the replaced job is still current, or the new one did not run")
	}
	h.release <- true // b fails
	wait(t, b.Done())
	if !r.Pending(v) {
		t.Fatal("a failed rebuild is not remembered")
	}
	if j, _ := r.Start(ctx, v, files("b"), 2, []int{0, 1}, false); j != nil {
		t.Fatal("the failed files were tried again unforced")
	}
	c, _ := r.Start(ctx, v, files("b"), 2, []int{0, 1}, true)
	if c == nil || <-h.started != c {
		t.Fatal("a forced start did not try the failed files again")
	}
	if r.Stop(v) != c {
		t.Fatal("Stop did not return the running job")
	}
	wait(t, c.Done())
	if r.Pending(v) {
		t.Fatal("a stopped job is still pending")
	}

	d, _ := r.Start(ctx, v, files("d"), 2, []int{0, 1}, false)
	<-h.started
	h.release <- false // d succeeds
	wait(t, d.Done())
	if r.Pending(v) || r.Forget(v) {
		t.Fatal("a rebuild that succeeded is still pending or remembered as failed")
	}
	e, _ := r.Start(ctx, v, files("e"), 2, []int{0, 1}, false)
	<-h.started
	h.release <- true
	wait(t, e.Done())
	if !r.Forget(v) || r.Pending(v) {
		t.Fatal("Forget did not drop the failure")
	}
	wg.Wait()
}
