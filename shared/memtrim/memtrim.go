package memtrim

import (
	"context"
	"runtime/debug"
	"time"

	"go.uber.org/zap"
)

// DefaultInterval is the least time between two trims of a Trimmer: a
// trim forces a garbage collection and reads the process's mappings,
// some milliseconds of CPU.
const DefaultInterval = time.Second

// Options configures a Trimmer. Zero values select the defaults noted.
type Options struct {
	// Interval: default DefaultInterval.
	Interval time.Duration
	// Log receives a debug line per trim; default none.
	Log *zap.Logger
}

// Trimmer trims the process's memory (Trim) when asked, at most once per
// interval. It is safe for concurrent use.
type Trimmer struct {
	o    Options
	kick chan struct{} // one pending request
	// trimmed is called after each trim (tests count them).
	trimmed func()
	// warned: a failure was logged at warn level; later ones go to
	// debug (where /proc cannot be read, every trim fails alike). Only
	// Run's goroutine uses it.
	warned bool
}

// New returns a Trimmer; Run does its work.
func New(o Options) *Trimmer {
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	return &Trimmer{o: o, kick: make(chan struct{}, 1)}
}

// Request asks for a trim soon and returns at once; requests that come
// while one waits are one.
func (t *Trimmer) Request() {
	select {
	case t.kick <- struct{}{}:
	default:
	}
}

// Run trims once at once (what the process's start touched), then after
// each Request, waiting out the interval since the last trim, until ctx
// ends.
func (t *Trimmer) Run(ctx context.Context) {
	for {
		t.trim()
		select {
		case <-ctx.Done():
			return
		case <-time.After(t.o.Interval):
		}
		select {
		case <-ctx.Done():
			return
		case <-t.kick:
		}
	}
}

func (t *Trimmer) trim() {
	start := time.Now()
	r, err := Trim()
	if err != nil {
		log := t.o.Log.Debug
		if !t.warned {
			log, t.warned = t.o.Log.Warn, true
		}
		log("trimming the executable's pages failed; the heap is trimmed still", zap.Error(err))
	}
	if t.trimmed != nil {
		t.trimmed()
	}
	t.o.Log.Debug("trimmed memory", zap.Int64("executable_bytes_dropped", r.ExecutableDropped),
		zap.Int("mappings_skipped", r.Skipped), zap.Duration("took", time.Since(start)))
}

// Result is what a trim did.
type Result struct {
	// ExecutableDropped is how many bytes of the executable's pages were
	// in the process's RSS before they were dropped.
	ExecutableDropped int64
	// Skipped counts read-only mappings of the executable left alone
	// because they hold private copies of pages.
	Skipped int
}

// Trim returns the Go heap's free pages to the system and drops the
// resident pages of the executable's read-only mappings from the
// process (see the package comment), now.
func Trim() (Result, error) {
	debug.FreeOSMemory()
	return dropExecutable()
}
