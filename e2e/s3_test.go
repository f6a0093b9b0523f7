//go:build e2e

package e2e

import (
	"context"
	"testing"
	"time"

	"spangle/e2e/dataset"
	"spangle/e2e/framework"
	"spangle/e2e/load"
	"spangle/shared/wire"
)

// s3Down is how long the S3 server stays away.
const s3Down = 30 * time.Second

// s3Outage: the S3 server the storaged read their source from stops for
// 30 s while a new version is published. Reads go on from the local
// stores with no failure and no regression; the storaged show the source
// error on /healthz; once S3 is back the new version loads and every
// reader moves to it.
func (s *suite) s3Outage(t *testing.T, ctx context.Context, r *row) {
	run := load.Start(ctx, s.loadOptions(s.routerURL(t, ctx)))
	observe(ctx, 2*time.Second)
	if err := s.c.Stop(ctx, framework.S3); err != nil {
		run.Stop()
		t.Fatal(err)
	}
	down := time.Now()
	next := s.nextVersion()
	if err := s.c.Publish(dataset.Spec{Version: next}); err != nil {
		run.Stop()
		t.Fatal(err)
	}
	// The storaged notice at their next refresh.
	errShown := framework.WaitFor(ctx, s3Down, 250*time.Millisecond, "the source error on a storaged's /healthz",
		func(ctx context.Context) (bool, error) {
			for _, svc := range framework.StoragedServices() {
				h, _ := s.c.GetHealth(ctx, svc)
				for _, e := range h[wire.HealthSource] {
					if e.State == wire.StateError {
						return true, nil
					}
				}
			}
			return false, nil
		})
	observe(ctx, s3Down-time.Since(down))
	if err := s.c.Start(ctx, framework.S3); err != nil {
		run.Stop()
		t.Fatal(err)
	}
	back := time.Now()
	s.awaitSwitch(t, ctx, run, r, next, back, 100*time.Millisecond, 2*time.Second, "S3 back to all on new ver")
	if errShown != nil {
		t.Errorf("S3 down: %v", errShown)
	}
}
