//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"spangle/e2e/dataset"
	"spangle/e2e/framework"
	"spangle/e2e/load"
	"spangle/shared/wire"
)

// coldStart: the cluster comes up and every key of the generated
// dataset reads back correctly through routerd.
func (s *suite) coldStart(t *testing.T, ctx context.Context, upStart time.Time, r *row) {
	r.recoveryOf = "compose up to serving"
	res, servingAt := s.sweepWhenServing(t, ctx)
	*r = fromResult(r.name, res)
	r.recovery, r.recoveryOf = servingAt.Sub(upStart), "compose up to serving"
	if res.Reads != dataset.DefaultKeys {
		t.Errorf("read %d keys, want %d", res.Reads, dataset.DefaultKeys)
	}
}

// sweepWhenServing waits until every container is healthy and routerd
// serves the current version, then reads every key once through routerd
// with 8 readers, and checks that none failed and every answer came from
// the current version. It returns the sweep and when serving began.
func (s *suite) sweepWhenServing(t *testing.T, ctx context.Context) (*load.Result, time.Time) {
	t.Helper()
	if err := s.c.WaitAllHealthy(ctx, ready); err != nil {
		t.Fatal(err)
	}
	s.waitServing(t, ctx, s.current)
	servingAt := time.Now()
	o := s.loadOptions(s.routerURL(t, ctx))
	o.Readers = 8
	res := load.Sweep(ctx, o)
	checkLoad(t, res)
	if res.Versions[s.current] != dataset.DefaultKeys {
		t.Errorf("answers per version %v, want all %d from %s", res.Versions, dataset.DefaultKeys, s.current)
	}
	return res, servingAt
}

// checkNoSourceReads fails the test unless every node of nodes read no
// record from the source since it started and reused at least one
// version from its local store; what each says is logged after what.
func (s *suite) checkNoSourceReads(t *testing.T, ctx context.Context, nodes []string, after string) {
	t.Helper()
	var proof []string
	for _, svc := range nodes {
		m, err := s.c.Metrics(ctx, svc)
		if err != nil {
			t.Error(err)
			continue
		}
		records := metric(m, "spangle_storaged_records_loaded_total")
		reused := metric(m, `spangle_storaged_version_loads_total{result="reused"}`)
		loaded := max(metric(m, `spangle_storaged_version_loads_total{result="loaded"}`), 0)
		proof = append(proof, fmt.Sprintf("%s: records read %v, versions reused %v, loaded %v", svc, records, reused, loaded))
		if records != 0 || reused < 1 {
			t.Errorf("%s re-read the source %s: records_loaded_total %v, reused %v, loaded %v", svc, after, records, reused, loaded)
		}
	}
	t.Logf("%s: %s", after, strings.Join(proof, "; "))
}

// nodeLoss: docker kill one storaged under load: zero failed reads.
func (s *suite) nodeLoss(t *testing.T, ctx context.Context, r *row) {
	const victim = "storaged2"
	res, killed := s.faultUnderLoad(t, ctx, func() error { return s.c.Kill(ctx, victim) })
	*r = fromResult(r.name, res)
	r.recoveryOf = "kill to last failed read"
	if res.Failed > 0 {
		r.recovery = res.Last.At.Sub(killed)
	}
	checkLoad(t, res)
	// It comes back from its local store (heal waits for it next).
	if err := s.c.Start(ctx, victim); err != nil {
		t.Fatal(err)
	}
}

// zkLoss: stop ZooKeeper for 30 s under load: zero failed reads; a
// version added meanwhile is adopted after it returns.
func (s *suite) zkLoss(t *testing.T, ctx context.Context, r *row) {
	run := load.Start(ctx, s.loadOptions(s.routerURL(t, ctx)))
	observe(ctx, 2*time.Second)
	stopped := time.Now()
	if err := s.c.Stop(ctx, framework.ZooKeeper); err != nil {
		run.Stop()
		t.Fatal(err)
	}
	observe(ctx, 5*time.Second)
	next := s.nextVersion()
	if err := s.c.Publish(dataset.Spec{Version: next}); err != nil {
		run.Stop()
		t.Fatal(err)
	}
	t.Logf("published %s while ZooKeeper is down", next)
	observe(ctx, time.Until(stopped.Add(30*time.Second)))
	if err := s.c.Start(ctx, framework.ZooKeeper); err != nil {
		run.Stop()
		t.Fatal(err)
	}
	back := time.Now()
	res := s.awaitSwitch(t, ctx, run, r, next, back, 250*time.Millisecond, 2*time.Second, "ZK back to new version read")
	if first, ok := res.FirstSeen[next]; ok && first.Before(back) {
		// Not a failure of the contract (storaged may adopt without
		// ZooKeeper only if it can tell the version is complete), but
		// worth knowing.
		t.Logf("%s was read before ZooKeeper came back (%v)", next, back.Sub(first))
	}
}

// upgrade: publish a new version while readers run: zero failed reads,
// no reader sees the version go down; the switch time is reported.
func (s *suite) upgrade(t *testing.T, ctx context.Context, r *row) {
	run := load.Start(ctx, s.loadOptions(s.routerURL(t, ctx)))
	observe(ctx, 2*time.Second)
	next := s.nextVersion()
	published := time.Now()
	if err := s.c.Publish(dataset.Spec{Version: next}); err != nil {
		run.Stop()
		t.Fatal(err)
	}
	res := s.awaitSwitch(t, ctx, run, r, next, published, 100*time.Millisecond, 3*time.Second, "publish to all readers on it")
	if _, ok := res.AllSeen[next]; ok {
		t.Logf("switch: first reader after %v, all readers after %v", res.FirstSeen[next].Sub(published), r.recovery)
	}
}

// awaitSwitch waits until every reader of run has read next, reads on
// for linger, stops run and records the scenario in r: its recovery
// runs from since to every reader on next (named recoveryOf). A version
// not adopted within two minutes is an error, noted in r.
func (s *suite) awaitSwitch(t *testing.T, ctx context.Context, run *load.Run, r *row, next string, since time.Time, poll, linger time.Duration, recoveryOf string) *load.Result {
	t.Helper()
	err := framework.WaitFor(ctx, 2*time.Minute, poll, "readers switching to "+next,
		func(context.Context) (bool, error) { return run.SeenByAll(next), nil })
	observe(ctx, linger)
	res := run.Stop()
	*r = fromResult(r.name, res)
	r.recoveryOf = recoveryOf
	if at, ok := res.AllSeen[next]; ok {
		r.recovery = max(at.Sub(since), 0)
		s.current = next
	}
	checkLoad(t, res)
	if err != nil {
		r.note = next + " not adopted"
		t.Error(err)
	}
	return res
}

// corruptVersion: a new version with a corrupt file goes to ERROR and the
// old version keeps serving; zero failed reads.
func (s *suite) corruptVersion(t *testing.T, ctx context.Context, r *row) {
	run := load.Start(ctx, s.loadOptions(s.routerURL(t, ctx)))
	observe(ctx, 2*time.Second)
	bad := s.nextVersion()
	published := time.Now()
	if err := s.c.Publish(dataset.Spec{Version: bad, Corrupt: true}); err != nil {
		run.Stop()
		t.Fatal(err)
	}
	var reason string
	err := framework.WaitFor(ctx, 2*time.Minute, 250*time.Millisecond, bad+" in ERROR on a storaged",
		func(ctx context.Context) (bool, error) {
			for _, svc := range framework.StoragedServices() {
				h, _ := s.c.GetHealth(ctx, svc)
				if vh := h[s.db][bad]; vh.State == wire.StateError {
					reason = svc + ": " + vh.Reason
					return true, nil
				}
			}
			return false, nil
		})
	errored := time.Now()
	observe(ctx, 5*time.Second)
	res := run.Stop()
	*r = fromResult(r.name, res)
	r.recoveryOf = "publish to ERROR shown"
	r.recovery = errored.Sub(published)
	checkLoad(t, res)
	if err != nil {
		r.note = "no ERROR state"
		t.Error(err)
	} else {
		t.Logf("ERROR reason: %s", reason)
	}
	if n := res.Versions[bad]; n > 0 {
		t.Errorf("%d answers from the corrupt version %s", n, bad)
	}
	if res.Versions[s.current] == 0 {
		t.Errorf("the old version %s did not keep serving: %v", s.current, res.Versions)
	}
	// Remove it, so that later scenarios (the full restart) see only
	// versions that load.
	if err := s.c.Unpublish(s.db, bad); err != nil {
		t.Fatal(err)
	}
}

// partition: docker network disconnect one storaged: after at most one
// proxy_stage_timeout, no failed reads; reconnecting heals.
func (s *suite) partition(t *testing.T, ctx context.Context, r *row) {
	const victim = "storaged3"
	res, cut := s.faultUnderLoad(t, ctx, func() error { return s.c.Disconnect(ctx, victim) })
	*r = fromResult(r.name, res)
	checkLate := func() {
		if late := res.FailedAfter(cut.Add(stageTimeout)); late > 0 {
			t.Errorf("%d failed reads later than one proxy_stage_timeout (%v) after the cut", late, stageTimeout)
		}
	}
	t.Logf("reads %d, failed %d (allowed only within %v of the cut), regressions %d, p99 %v, answered by %v",
		res.Reads, res.Failed, stageTimeout, res.Regressions, res.Quantile(0.99), res.ProxiedTo)
	for i, f := range res.Failures {
		if i == 10 {
			break
		}
		t.Logf("failed read: %v (%v after the cut)", f, f.At.Sub(cut))
	}
	checkLate()
	if res.Regressions > 0 {
		t.Errorf("%d version regressions", res.Regressions)
	}

	// Heal: reconnect; routerd must send reads to it again.
	if err := s.c.Connect(ctx, victim); err != nil {
		t.Fatal(err)
	}
	joined := time.Now()
	r.recoveryOf = "reconnect to reads answered"
	err := framework.WaitFor(ctx, 2*time.Minute, 0, victim+" answering reads through routerd again",
		func(ctx context.Context) (bool, error) {
			o := s.loadOptions(s.routerURL(t, ctx))
			o.Keys = 400
			got := load.Sweep(ctx, o)
			for node, n := range got.ProxiedTo {
				if strings.HasPrefix(node, victim) && n > 0 {
					return true, nil
				}
			}
			return false, fmt.Errorf("answered by %v", got.ProxiedTo)
		})
	if err != nil {
		r.note = "no heal"
		t.Error(err)
		return
	}
	r.recovery = time.Since(joined)
}

// fullRestart: all storaged restart and come back from their local
// stores without re-reading the source, and serve every key.
func (s *suite) fullRestart(t *testing.T, ctx context.Context, r *row) {
	nodes := framework.StoragedServices()
	parallel(t, nodes, func(svc string) error { return s.c.Stop(ctx, svc) })
	started := time.Now()
	parallel(t, nodes, func(svc string) error { return s.c.Start(ctx, svc) })
	res, servingAt := s.sweepWhenServing(t, ctx)
	*r = fromResult(r.name, res)
	r.recoveryOf = "start to serving"
	r.recovery = servingAt.Sub(started)
	// No record was read from the source since the restart: the
	// counters start at zero with the process.
	s.checkNoSourceReads(t, ctx, nodes, "after the restart")
}

// corruptThenRestart: a new version corrupt on every node goes to ERROR
// everywhere while the previous one serves; then every storaged restarts
// and serves the previous version again from its local store, without
// reading the source, while the corrupt one fails again. Zero failed
// reads of the previous version throughout the load phases.
func (s *suite) corruptThenRestart(t *testing.T, ctx context.Context, r *row) {
	nodes := framework.StoragedServices()
	run := load.Start(ctx, s.loadOptions(s.routerURL(t, ctx)))
	observe(ctx, 2*time.Second)
	bad := s.nextVersion()
	if err := s.c.Publish(dataset.Spec{Version: bad, Corrupt: true}); err != nil {
		run.Stop()
		t.Fatal(err)
	}
	errorEverywhere := func(what string) error {
		return framework.WaitFor(ctx, 2*time.Minute, 250*time.Millisecond, bad+" in ERROR on every storaged "+what,
			func(ctx context.Context) (bool, error) {
				for _, svc := range nodes {
					h, _ := s.c.GetHealth(ctx, svc)
					if st := h[s.db][bad].State; st != wire.StateError {
						return false, fmt.Errorf("%s: %q", svc, st)
					}
				}
				return true, nil
			})
	}
	err := errorEverywhere("before the restart")
	observe(ctx, 3*time.Second)
	before := run.Stop()
	checkLoad(t, before)
	if err != nil {
		t.Fatal(err)
	}

	parallel(t, nodes, func(svc string) error { return s.c.Stop(ctx, svc) })
	started := time.Now()
	parallel(t, nodes, func(svc string) error { return s.c.Start(ctx, svc) })
	if err := s.c.WaitAllHealthy(ctx, ready); err != nil {
		t.Fatal(err)
	}
	s.waitServing(t, ctx, s.current)
	servingAt := time.Now()
	run = load.Start(ctx, s.loadOptions(s.routerURL(t, ctx)))
	if err := errorEverywhere("after the restart"); err != nil {
		t.Error(err)
	}
	observe(ctx, 3*time.Second)
	after := run.Stop()
	o := s.loadOptions(s.routerURL(t, ctx))
	o.Readers = 8
	sweep := load.Sweep(ctx, o)
	*r = fromResult(r.name, after)
	r.reads += before.Reads + sweep.Reads
	r.failed += before.Failed + sweep.Failed
	r.regressions += before.Regressions + sweep.Regressions
	r.recoveryOf = "start to serving"
	r.recovery = servingAt.Sub(started)
	checkLoad(t, after)
	checkLoad(t, sweep)
	for _, res := range []*load.Result{before, after, sweep} {
		if n := res.Versions[bad]; n > 0 {
			t.Errorf("%d answers from the corrupt version %s", n, bad)
		}
	}
	if sweep.Versions[s.current] != dataset.DefaultKeys {
		t.Errorf("answers per version %v, want all %d from %s", sweep.Versions, dataset.DefaultKeys, s.current)
	}
	for _, svc := range nodes {
		m, err := s.c.Metrics(ctx, svc)
		if err != nil {
			t.Error(err)
			continue
		}
		if records := metric(m, "spangle_storaged_records_loaded_total"); records != 0 {
			t.Errorf("%s read %v records from the source after the restart; want %s from its local store", svc, records, s.current)
		}
	}
	if err := s.c.Unpublish(s.db, bad); err != nil {
		t.Fatal(err)
	}
}

func parallel(t *testing.T, items []string, f func(string) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, len(items))
	for i, it := range items {
		wg.Add(1)
		go func(i int, it string) {
			defer wg.Done()
			errs[i] = f(it)
		}(i, it)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// metric returns a sample's value from Prometheus text, -1 when absent.
func metric(text, name string) float64 {
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` ([0-9.eE+-]+)$`)
	m := re.FindStringSubmatch(text)
	if m == nil {
		return -1
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return -1
	}
	return v
}

// faultUnderLoad runs readers through routerd for 3 s, injects fault,
// keeps reading for 15 s and returns what the readers saw and when the
// fault began.
func (s *suite) faultUnderLoad(t *testing.T, ctx context.Context, fault func() error) (*load.Result, time.Time) {
	t.Helper()
	run := load.Start(ctx, s.loadOptions(s.routerURL(t, ctx)))
	observe(ctx, 3*time.Second)
	at := time.Now()
	if err := fault(); err != nil {
		run.Stop()
		t.Fatal(err)
	}
	observe(ctx, 15*time.Second)
	return run.Stop(), at
}
