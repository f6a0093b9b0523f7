package wait

import (
	"context"
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
