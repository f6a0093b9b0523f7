package scrub

import (
	"context"
	"sync"
	"time"

	"spangle/shared/wait"
)

// paceSlack is how far behind its schedule the pacer lets reads run
// before it sleeps: sleeps shorter than that would cost more in timer
// overshoot than they pace.
const paceSlack = 20 * time.Millisecond

// Pacer bounds the rate of reads shared by several readers: over any
// stretch of time t, at most rate*(t+paceSlack) bytes and one read more.
// It gives no credit for time it was idle, so a scrub that starts does
// not burst. It is safe for concurrent use.
type Pacer struct {
	rate  float64 // bytes per second, positive
	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration) error

	mu   sync.Mutex
	next time.Time // guarded by mu: when the bytes granted so far are paid for
}

// NewPacer returns a Pacer of rate bytes per second (positive).
func NewPacer(rate float64) *Pacer {
	return &Pacer{rate: rate, now: time.Now, sleep: wait.Sleep}
}

// Wait returns when n more bytes may be read, or ctx's error.
func (p *Pacer) Wait(ctx context.Context, n int) error {
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
