package proxy

import (
	"sync"
	"time"
)

// Defaults of the hedge budget.
const (
	DefaultHedgeRatio  = 0.1
	DefaultHedgeWindow = 3 * time.Second
	DefaultMinHedges   = 10
	budgetBuckets      = 10
)

// Budget caps hedged requests at a fraction of all requests over a
// sliding window, plus a small allowance per window so that a quiet
// router can still hedge. Without it, a slow cluster would get every
// request twice exactly when it can least take it. It is safe for
// concurrent use.
type Budget struct {
	ratio  float64
	min    int
	bucket int64 // bucket width in ns

	mu  sync.Mutex
	buf [budgetBuckets]budgetBucket // guarded by mu; ring indexed by epoch % len
}

type budgetBucket struct {
	epoch            int64
	requests, hedges int
}

// NewBudget allows ratio hedges per request over window, plus min per
// window. ratio <= 0 allows no hedges at all.
func NewBudget(ratio float64, window time.Duration, min int) *Budget {
	if window <= 0 {
		window = DefaultHedgeWindow
	}
	if ratio <= 0 {
		min = 0
	}
	return &Budget{ratio: ratio, min: min, bucket: int64(window) / budgetBuckets}
}

func (b *Budget) slotLocked(now int64) *budgetBucket {
	e := now / b.bucket
	s := &b.buf[e%budgetBuckets]
	if s.epoch != e {
		*s = budgetBucket{epoch: e}
	}
	return s
}

// Request counts one request that might be hedged.
func (b *Budget) Request() {
	now := time.Now().UnixNano()
	b.mu.Lock()
	b.slotLocked(now).requests++
	b.mu.Unlock()
}

// AllowHedge reports whether one more hedge fits the budget, and if so
// counts it.
func (b *Budget) AllowHedge() bool {
	if b.ratio <= 0 {
		return false
	}
	now := time.Now().UnixNano()
	b.mu.Lock()
	defer b.mu.Unlock()
	cur := b.slotLocked(now)
	var reqs, hedges int
	for i := range b.buf {
		if s := &b.buf[i]; s.epoch > cur.epoch-budgetBuckets {
			reqs += s.requests
			hedges += s.hedges
		}
	}
	if float64(hedges) >= b.ratio*float64(reqs)+float64(b.min) {
		return false
	}
	cur.hedges++
	return true
}
