package wait

import (
	"context"
	"fmt"
	"time"
)

// Sleep waits for d or until ctx ends, whichever comes first. It returns
// nil after a full sleep and ctx.Err() when ctx ended first, so a loop
// can tell "time for the next round" from "stop".
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Poll calls cond every interval until cond reports done, and returns
// cond's error then: nil when the condition holds, an error when it
// never will. An error with done false is passing (not up yet); the last
// one is named in the error Poll returns, wrapping ctx.Err(), when ctx
// ends first. Bound the wait with a ctx deadline.
func Poll(ctx context.Context, interval time.Duration, cond func(ctx context.Context) (done bool, err error)) error {
	var last error
	for {
		done, err := cond(ctx)
		if done {
			return err
		}
		if err != nil {
			last = err
		}
		if err := Sleep(ctx, interval); err != nil {
			if last != nil {
				return fmt.Errorf("%w (last error: %v)", err, last)
			}
			return err
		}
	}
}

// Every calls fn at once, then every d, until ctx ends. A call that
// takes longer than d delays the next; none overlap.
func Every(ctx context.Context, d time.Duration, fn func(ctx context.Context)) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		fn(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
