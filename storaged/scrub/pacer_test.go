package scrub

import (
	"context"
	"sync"
	"testing"
	"time"
)

// fakeClock moves only when the pacer sleeps.
type fakeClock struct {
	mu    sync.Mutex
	t     time.Time
	slept time.Duration
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) sleep(_ context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	c.slept += d
	return nil
}

func fakePacer(rate float64) (*Pacer, *fakeClock) {
	c := &fakeClock{t: time.Unix(1e9, 0)}
	p := NewPacer(rate)
	p.now, p.sleep = c.now, c.sleep
	return p, c
}

// The pacer holds reads to its rate: 10 MB at 1 MB/s in 64 KiB reads
// takes 10 s of the clock (less the last read, and the slack it lets run
// ahead), and no more.
func TestPacerBound(t *testing.T) {
	const rate, chunk, total = 1e6, 64 << 10, 10e6
	p, c := fakePacer(rate)
	done := 0
	for done < total {
		if err := p.Wait(context.Background(), chunk); err != nil {
			t.Fatal(err)
		}
		done += chunk
	}
	lo := time.Duration(float64(done-chunk)/rate*1e9) - paceSlack
	hi := time.Duration(float64(done) / rate * 1e9)
	if c.slept < lo || c.slept > hi {
		t.Fatalf("%d bytes at %v B/s slept %v, want between %v and %v", done, rate, c.slept, lo, hi)
	}
}

// Readers sharing a pacer share its rate, and time it sat idle gives no
// burst: after a long pause the next reads are paced from then on.
func TestPacerSharedAndNoBurst(t *testing.T) {
	const rate, chunk, per, readers = 1e6, 32 << 10, 100, 4
	p, c := fakePacer(rate)
	var wg sync.WaitGroup
	for r := 0; r < readers; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				p.Wait(context.Background(), chunk)
			}
		}()
	}
	wg.Wait()
	total := float64(readers * per * chunk)
	if lo := time.Duration((total-readers*chunk)/rate*1e9) - paceSlack; c.slept < lo {
		t.Fatalf("%v bytes from %d readers at %v B/s slept %v, want at least %v", total, readers, rate, c.slept, lo)
	}

	c.sleep(context.Background(), time.Hour) // idle
	before := c.slept
	for i := 0; i < 100; i++ {
		p.Wait(context.Background(), chunk)
	}
	if lo := time.Duration(99*chunk/rate*1e9) - paceSlack; c.slept-before < lo {
		t.Fatalf("after an idle hour, 100 reads slept %v, want at least %v", c.slept-before, lo)
	}
}

// A wait whose context ends returns its error.
func TestPacerCancelled(t *testing.T) {
	p := NewPacer(1) // one byte a second: the second read waits long
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p.Wait(ctx, 1000)
	if err := p.Wait(ctx, 1000); err == nil {
		t.Fatal("a cancelled wait returned nil")
	}
}
