package scrub

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"spangle/storaged/table"
)

// Scrubber checks versions' partitions at a rate bounded over the node.
// It is safe for concurrent use; a nil *Scrubber is off.
type Scrubber struct {
	rate  float64
	pace  *Pacer
	bytes prometheus.Counter
	log   *zap.Logger
}

// New returns a Scrubber reading at most rate bytes per second over all
// its scrubs, counting what it reads in bytes (nil: not counted); nil when
// rate is not positive (the scrub is off: a bad block is then found only
// when a lookup reads it).
func New(rate float64, bytes prometheus.Counter, log *zap.Logger) *Scrubber {
	if rate <= 0 {
		return nil
	}
	if log == nil {
		log = zap.NewNop()
	}
	return &Scrubber{rate: rate, pace: NewPacer(rate), bytes: bytes, log: log}
}

// Target is the version a scrub checks.
type Target struct {
	DB, Version string
	// Held are the partitions to check, in order.
	Held []int
	// Dir returns partition p's directory.
	Dir func(p int) string
	// Serving returns the open partition p as it serves now, nil once it
	// no longer does (dropped, or its version went): then it is skipped.
	Serving func(p int) *table.Partition
	// Corrupt is told of each partition found with a bad block, with the
	// copy that served when its check began. It may block; an error (ctx
	// ended) ends the scrub.
	Corrupt func(ctx context.Context, p int, part *table.Partition, err error) error
}

// Scrub checks t's partitions one after the other, until done or ctx
// ends.
func (s *Scrubber) Scrub(ctx context.Context, t Target) {
	if s == nil || len(t.Held) == 0 {
		return
	}
	start := time.Now()
	var read int64
	bad := 0
	pace := func(n int) error {
		read += int64(n)
		if s.bytes != nil {
			s.bytes.Add(float64(n))
		}
		return s.pace.Wait(ctx, n)
	}
	s.log.Info("scrubbing a version reused from the local store", zap.String("db", t.DB), zap.String("version", t.Version),
		zap.Ints("partitions", t.Held), zap.Float64("rate_mb_per_s", s.rate/1e6))
	for _, p := range t.Held {
		part := t.Serving(p)
		if part == nil {
			continue // dropped meanwhile, or the version went
		}
		err := table.VerifyPartition(ctx, t.Dir(p), pace)
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return
		case errors.Is(err, table.ErrCorrupt):
			bad++
			if t.Corrupt(ctx, p, part, err) != nil {
				return
			}
		default:
			// Its files went under the scrub: the partition was dropped,
			// rebuilt or its version removed meanwhile.
			s.log.Debug("scrub could not read a partition", zap.String("db", t.DB), zap.String("version", t.Version),
				zap.Int("partition", p), zap.Error(err))
		}
	}
	s.log.Info("scrub finished", zap.String("db", t.DB), zap.String("version", t.Version), zap.Int("corrupt_partitions", bad),
		zap.Int64("bytes", read), zap.Duration("took", time.Since(start)))
}
