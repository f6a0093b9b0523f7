package framework

import (
	"context"
	"errors"
	"fmt"
	"time"

	"spangle/shared/wait"
	"spangle/shared/wire"
)

// ErrTimeout is returned by WaitFor when the condition never held.
var ErrTimeout = errors.New("framework: timed out")

// WaitFor polls cond every interval (wait.Poll) until it reports true,
// ctx ends or timeout passes; the error names what was awaited and the
// last error cond returned.
func WaitFor(ctx context.Context, timeout, interval time.Duration, what string, cond func(ctx context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := wait.Poll(ctx, interval, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		if ok {
			return true, nil
		}
		return false, err
	})
	if err != nil {
		return fmt.Errorf("%w after %v waiting for %s: %v", ErrTimeout, timeout, what, err)
	}
	return nil
}

// WaitHealthy waits until the service's /healthz answers 200.
func (c *Cluster) WaitHealthy(ctx context.Context, svc string, timeout time.Duration) error {
	return WaitFor(ctx, timeout, 250*time.Millisecond, svc+" healthy", func(ctx context.Context) (bool, error) {
		_, err := c.GetHealth(ctx, svc)
		return err == nil, err
	})
}

// WaitActive waits until the service's /healthz shows version of db
// ACTIVE.
func (c *Cluster) WaitActive(ctx context.Context, svc, db, version string, timeout time.Duration) error {
	return WaitFor(ctx, timeout, 250*time.Millisecond, fmt.Sprintf("%s serving %s/%s", svc, db, version), func(ctx context.Context) (bool, error) {
		h, err := c.GetHealth(ctx, svc)
		return h[db][version].State == wire.StateActive, err
	})
}

// WaitAllHealthy waits until every storaged and routerd are healthy.
func (c *Cluster) WaitAllHealthy(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for _, svc := range append(StoragedServices(), Routerd) {
		if err := c.WaitHealthy(ctx, svc, time.Until(deadline)); err != nil {
			return err
		}
	}
	return nil
}
