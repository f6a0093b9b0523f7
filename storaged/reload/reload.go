package reload

import (
	"context"
	"sync"

	"spangle/shared/dbver"
	"spangle/shared/source"
)

// Host builds a version again and swaps it in.
type Host interface {
	// Rebuild builds j's version again from j.Files beside the copy that
	// serves, and swaps it in or says why not. ctx ends when j is stopped
	// or replaced; parent is the manager's context, for what outlives the
	// swap. Under its own lock it checks j.Current before the swap and
	// ends j with j.Finish.
	Rebuild(parent, ctx context.Context, j *Job)
}

// Job is one version being built again.
type Job struct {
	V     dbver.Version
	Files []source.File // the files it is built from
	N     int           // the served copy's partition count
	Held  []int         // the partitions the served copy held at the start

	r      *Reloader
	cancel context.CancelFunc
	done   chan struct{} // closed once the job no longer touches the store
}

// Done is closed once j's goroutine no longer touches the store's
// rebuild directory of its version.
func (j *Job) Done() <-chan struct{} { return j.done }

// Current reports whether j is still its version's rebuild: neither
// stopped nor replaced.
func (j *Job) Current() bool {
	j.r.mu.Lock()
	defer j.r.mu.Unlock()
	return j.r.jobs[j.V] == j
}

// Finish ends j, if still current; failed remembers its files, which are
// then not tried again until they change or Start is forced.
func (j *Job) Finish(failed bool) {
	j.r.mu.Lock()
	defer j.r.mu.Unlock()
	if j.r.jobs[j.V] != j {
		return
	}
	delete(j.r.jobs, j.V)
	if failed {
		j.r.failed[j.V] = j.Files
	}
}

// Reloader tracks the rebuilds of changed versions. It is safe for
// concurrent use.
type Reloader struct {
	host Host
	wg   *sync.WaitGroup

	mu     sync.Mutex
	jobs   map[dbver.Version]*Job          // guarded by mu
	failed map[dbver.Version][]source.File // guarded by mu; the files a rebuild failed with
}

// New returns a Reloader whose jobs call host; wg counts their
// goroutines, so that the host's shutdown waits for them.
func New(host Host, wg *sync.WaitGroup) *Reloader {
	return &Reloader{host: host, wg: wg, jobs: map[dbver.Version]*Job{}, failed: map[dbver.Version][]source.File{}}
}

// Start starts building v again from files, a copy of n partitions of
// which held are served, unless a rebuild from these files runs, or
// failed and force is false. It returns the job started (nil: none) and
// the one it replaced, cancelled (nil: none); a job started after
// another waits until that one is done.
func (r *Reloader) Start(parent context.Context, v dbver.Version, files []source.File, n int, held []int, force bool) (started, replaced *Job) {
	r.mu.Lock()
	defer r.mu.Unlock()
	prev := r.jobs[v]
	switch {
	case prev != nil && source.SameFiles(prev.Files, files):
		return nil, nil
	case prev == nil && r.failed[v] != nil && source.SameFiles(r.failed[v], files) && !force:
		return nil, nil
	}
	if prev != nil {
		prev.cancel()
	}
	if parent == nil {
		parent = context.Background()
	}
	ctx, cancel := context.WithCancel(parent)
	j := &Job{V: v, Files: files, N: n, Held: held, r: r, cancel: cancel, done: make(chan struct{})}
	r.jobs[v] = j
	delete(r.failed, v)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer close(j.done)
		defer cancel()
		if prev != nil {
			<-prev.done // it used the same directory
		}
		r.host.Rebuild(parent, ctx, j)
	}()
	return j, prev
}

// Stop cancels v's rebuild, if any, and returns it: the caller waits for
// its Done before deleting the version's files.
func (r *Reloader) Stop(v dbver.Version) *Job {
	r.mu.Lock()
	defer r.mu.Unlock()
	j := r.jobs[v]
	if j != nil {
		j.cancel()
		delete(r.jobs, v)
	}
	return j
}

// Forget stops v's rebuild and forgets that one failed: its files went
// back to the ones it serves, or the version is gone. It reports whether
// a rebuild had failed.
func (r *Reloader) Forget(v dbver.Version) (hadFailed bool) {
	r.Stop(v)
	r.mu.Lock()
	defer r.mu.Unlock()
	_, hadFailed = r.failed[v]
	delete(r.failed, v)
	return hadFailed
}

// Pending reports whether v is being built again, or a rebuild of it
// failed.
func (r *Reloader) Pending(v dbver.Version) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.jobs[v] != nil || r.failed[v] != nil
}
