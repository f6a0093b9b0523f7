package versions

import (
	"context"
	"errors"
	"os"
	"sync"
	"time"

	"go.uber.org/zap"

	"spangle/storaged/table"
)

// A version reused from the local store after a restart was checked when
// it was built, but its files have sat on disk since: the scrub reads
// every block of every held partition back and checks its checksum, in
// the background while the version serves, at a rate bounded over the
// whole node (RepairOptions.ScrubRate) so that it does not starve the
// lookups of the disk. A bad block it finds is reported as a lookup's is,
// and the partition rebuilt (repair.go). It reads the files itself
// (table.VerifyPartition), not through the open partitions, so it needs
// no reference to the version and leaves the block cache alone.

// afterReuse is called once a version reused from the local store
// serves: it deletes what an interrupted rebuild left beside its
// partitions, and starts the scrub.
func (m *Manager) afterReuse(db string, vs *vstate) {
	m.mu.Lock()
	ctx := m.ctx
	var held []int
	if m.servableLocked(db, vs.name) == vs {
		held = vs.v.Held()
	}
	m.mu.Unlock()
	for _, p := range held {
		dir := m.opts.Store.PartitionDir(db, vs.name, p)
		os.RemoveAll(dir + ".new")
		os.RemoveAll(dir + ".bad")
	}
	if m.rep.pace == nil || len(held) == 0 {
		return
	}
	if ctx == nil {
		ctx = context.Background()
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		m.scrub(ctx, db, vs, held)
	}()
}

// scrub checks the held partitions of vs one after the other.
func (m *Manager) scrub(ctx context.Context, db string, vs *vstate, held []int) {
	start := time.Now()
	var read int64
	bad := 0
	pace := func(n int) error {
		read += int64(n)
		m.rep.metrics.scrubBytes.Add(float64(n))
		return m.rep.pace.wait(ctx, n)
	}
	m.log.Info("scrubbing a version reused from the local store", zap.String("db", db), zap.String("version", vs.name),
		zap.Ints("partitions", held), zap.Float64("rate_mb_per_s", m.rep.opts.ScrubRate/1e6))
	for _, p := range held {
		m.mu.Lock()
		var part *table.Partition
		if m.servableLocked(db, vs.name) == vs {
			part = vs.v.parts[p]
		}
		m.mu.Unlock()
		if part == nil {
			continue // dropped meanwhile, or the version went
		}
		err := table.VerifyPartition(ctx, m.opts.Store.PartitionDir(db, vs.name, p), pace)
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return
		case errors.Is(err, table.ErrCorrupt):
			bad++
			select {
			case m.rep.reports <- corruptReport{db: db, version: vs.name, p: p, part: part, err: err, by: foundByScrub}:
			case <-ctx.Done():
				return
			}
		default:
			// Its files went under the scrub: the partition was dropped,
			// rebuilt or its version removed meanwhile.
			m.log.Debug("scrub could not read a partition", zap.String("db", db), zap.String("version", vs.name),
				zap.Int("partition", p), zap.Error(err))
		}
	}
	m.log.Info("scrub finished", zap.String("db", db), zap.String("version", vs.name), zap.Int("corrupt_partitions", bad),
		zap.Int64("bytes", read), zap.Duration("took", time.Since(start)))
}

// paceSlack is how far behind its schedule the pacer lets reads run
// before it sleeps: sleeps shorter than that would cost more in timer
// overshoot than they pace.
const paceSlack = 20 * time.Millisecond

// pacer bounds the rate of reads shared by several readers: over any
// stretch of time t, at most rate*(t+paceSlack) bytes and one read more.
// It gives no credit for time it was idle, so a scrub that starts does
// not burst. It is safe for concurrent use.
type pacer struct {
	rate  float64 // bytes per second, positive
	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration) error

	mu   sync.Mutex
	next time.Time // guarded by mu: when the bytes granted so far are paid for
}

func newPacer(rate float64) *pacer {
	return &pacer{rate: rate, now: time.Now, sleep: sleepCtx}
}

// wait returns when n more bytes may be read, or ctx's error.
func (p *pacer) wait(ctx context.Context, n int) error {
	p.mu.Lock()
	now := p.now()
	start := p.next
	if start.Before(now) {
		start = now
	}
	p.next = start.Add(time.Duration(float64(n) / p.rate * float64(time.Second)))
	p.mu.Unlock()
	if d := start.Sub(now); d >= paceSlack {
		return p.sleep(ctx, d)
	}
	return ctx.Err()
}
