//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"spangle/e2e/dataset"
	"spangle/e2e/framework"
	"spangle/e2e/load"
	"spangle/shared/wire"
)

// rollingRewrite: the served version's files are rewritten in place in
// the source, as a job that overwrites its output does, so every
// storaged finds the files of the version it serves changed; once each
// has built it again beside the copy that serves and swapped it in,
// every storaged is restarted in turn. Under read load throughout: zero
// failed reads, zero regressions; after its restart each storaged serves
// the rebuilt copy from its local store.
func (s *suite) rollingRewrite(t *testing.T, ctx context.Context, r *row) {
	nodes := framework.StoragedServices()
	const reloads = "spangle_storaged_version_reloads_total"
	before := map[string]float64{}
	for _, svc := range nodes {
		m, err := s.c.Metrics(ctx, svc)
		if err != nil {
			t.Fatal(err)
		}
		before[svc] = max(metric(m, reloads), 0)
	}
	run := load.Start(ctx, s.loadOptions(s.routerURL(t, ctx)))
	fail := func(err error) {
		t.Helper()
		res := run.Stop()
		*r = fromResult(r.name, res)
		t.Fatal(err)
	}
	observe(ctx, 2*time.Second)
	rewritten := time.Now()
	if err := dataset.Rewrite(s.c.SourceDir(), dataset.Spec{Version: s.current}); err != nil {
		fail(err)
	}
	err := framework.WaitFor(ctx, 2*time.Minute, 250*time.Millisecond, "every storaged serving "+s.current+" rebuilt",
		func(ctx context.Context) (bool, error) {
			for _, svc := range nodes {
				m, err := s.c.Metrics(ctx, svc)
				if err != nil {
					return false, err
				}
				if metric(m, reloads) <= before[svc] {
					return false, fmt.Errorf("%s has not seen the rewrite", svc)
				}
				h, _ := s.c.GetHealth(ctx, svc)
				if st := h[s.db][s.current]; st.State != wire.StateActive || st.Reason != "" {
					return false, fmt.Errorf("%s: %s %q", svc, st.State, st.Reason)
				}
			}
			return true, nil
		})
	if err != nil {
		fail(err)
	}
	rebuilt := time.Now()
	t.Logf("every storaged rebuilt %s %v after the rewrite", s.current, rebuilt.Sub(rewritten).Round(time.Millisecond))
	for _, svc := range nodes {
		if err := s.c.Stop(ctx, svc); err != nil {
			fail(err)
		}
		if err := s.c.Start(ctx, svc); err != nil {
			fail(err)
		}
		if err := s.c.WaitActive(ctx, svc, s.db, s.current, 2*time.Minute); err != nil {
			fail(err)
		}
		observe(ctx, 2*time.Second) // routerd sees its partitions again before the next goes
	}
	res := run.Stop()
	*r = fromResult(r.name, res)
	r.recoveryOf = "rewrite to every storaged rebuilt"
	r.recovery = rebuilt.Sub(rewritten)
	checkLoad(t, res)
	if res.Versions[s.current] != res.Reads-res.Failed {
		t.Errorf("answers per version %v, want all from %s", res.Versions, s.current)
	}
	s.checkNoSourceReads(t, ctx, nodes, "after the restarts (the rebuilt copy reused)")
}
