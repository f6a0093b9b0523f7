//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"spangle/e2e/dataset"
	"spangle/e2e/framework"
	"spangle/e2e/load"
)

// Timings of the compose cluster (deploy/docker-compose.yml and
// deploy/storaged.toml) that the scenarios rely on.
const (
	stageTimeout = 150 * time.Millisecond // routerd --proxy-stage-timeout
	// ready bounds how long a cluster (or a restarted node) may take to
	// serve: generous, for a loaded 2-core machine.
	ready = 3 * time.Minute
)

// suite is the state the scenarios share: one cluster, reused.
type suite struct {
	c       *framework.Cluster
	rep     *report
	db      string
	version int    // number of the last version published
	current string // the version every scenario leaves serving
}

// nextVersion returns a new version name, greater than every earlier one.
func (s *suite) nextVersion() string {
	s.version++
	return fmt.Sprintf("v%04d", s.version)
}

func (s *suite) loadOptions(base string) load.Options {
	return load.Options{Base: base, TLS: s.c.TLS(), DB: s.db, Keys: dataset.DefaultKeys, Key: dataset.Key, Value: dataset.Value, Readers: 4}
}

func (s *suite) routerURL(t *testing.T, ctx context.Context) string {
	t.Helper()
	u, err := s.c.URL(ctx, framework.Routerd)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// heal puts the cluster back as it started: every container running and
// on the network, every node healthy. Each scenario after the first
// begins with it, so one scenario's failure does not spill into the next.
func (s *suite) heal(t *testing.T, ctx context.Context) {
	t.Helper()
	for _, svc := range append([]string{framework.ZooKeeper, framework.Routerd, framework.S3}, framework.StoragedServices()...) {
		running, err := s.c.Running(ctx, svc)
		if err != nil {
			t.Fatal(err)
		}
		if !running {
			t.Logf("heal: starting %s", svc)
			if err := s.c.Start(ctx, svc); err != nil {
				t.Fatal(err)
			}
		}
		// Connecting a connected container fails harmlessly.
		_ = s.c.Connect(ctx, svc)
	}
	if err := s.c.WaitAllHealthy(ctx, ready); err != nil {
		t.Fatal(err)
	}
	s.waitServing(t, ctx, s.current)
}

// waitServing waits until routerd answers a sample of keys, all from
// version.
func (s *suite) waitServing(t *testing.T, ctx context.Context, version string) {
	t.Helper()
	err := framework.WaitFor(ctx, ready, 500*time.Millisecond, "routerd serving "+version, func(ctx context.Context) (bool, error) {
		o := s.loadOptions(s.routerURL(t, ctx))
		o.Keys = 200
		res := load.Sweep(ctx, o)
		if res.Failed > 0 {
			return false, fmt.Errorf("%d of %d sample reads failed, e.g. %v", res.Failed, res.Reads, res.Failures[0])
		}
		return res.Versions[version] == res.Reads, fmt.Errorf("versions %v", res.Versions)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// observe keeps the load running for d.
func observe(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// dumpLogs logs the tail of every container's log, for a failed run.
func (s *suite) dumpLogs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, svc := range append([]string{framework.ZooKeeper, framework.Routerd, framework.S3}, framework.StoragedServices()...) {
		out, err := s.c.Logs(ctx, svc)
		if err != nil {
			t.Logf("logs of %s: %v", svc, err)
		}
		lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
		if len(lines) > 40 {
			lines = lines[len(lines)-40:]
		}
		t.Logf("---- last log lines of %s ----\n%s", svc, strings.Join(lines, "\n"))
	}
}

// checkLoad fails t with the load's failures and regressions.
func checkLoad(t *testing.T, res *load.Result) {
	t.Helper()
	t.Logf("reads %d, failed %d, regressions %d, p50 %v, p99 %v, versions %v, answered by %v, statuses %v",
		res.Reads, res.Failed, res.Regressions, res.Quantile(0.5), res.Quantile(0.99), res.Versions, res.ProxiedTo, res.Statuses)
	if res.Reads == 0 {
		t.Errorf("no reads at all")
	}
	if res.Failed > 0 {
		for i, f := range res.Failures {
			if i == 10 {
				break
			}
			t.Logf("failed read: %v", f)
		}
		t.Errorf("%d failed reads (last %v)", res.Failed, res.Last)
	}
	if res.Regressions > 0 {
		t.Errorf("%d version regressions, e.g. %v", res.Regressions, res.RegressionSamples[0])
	}
}

func TestScenarios(t *testing.T) {
	ctx := context.Background()
	s := &suite{rep: &report{}, db: dataset.DefaultDB}
	defer s.rep.print(os.Stdout)
	s.current = s.nextVersion()
	upStart := time.Now()
	var extra []string
	if files := os.Getenv("E2E_COMPOSE_FILES"); files != "" {
		extra = strings.Split(files, ",")
	}
	c, err := framework.Up(ctx, framework.Options{Initial: dataset.Spec{Version: s.current},
		Also:       []dataset.Spec{{DB: sparkeyDB, Version: sparkeyVersion, Sparkey: true}, {DB: parquetDB, Version: parquetVersion, Parquet: true}},
		ExtraFiles: extra, Logf: t.Logf})
	if err != nil {
		s.rep.add(row{name: "1 cold start", note: "compose up failed"})
		t.Fatal(err)
	}
	s.c = c
	t.Cleanup(func() {
		if t.Failed() {
			s.dumpLogs(t)
		}
		if os.Getenv("E2E_KEEP") != "" {
			t.Logf("E2E_KEEP set: cluster %s left running", c.Project())
			return
		}
		dctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := c.Down(dctx); err != nil {
			t.Errorf("down: %v", err)
		}
	})

	if !s.scenario(t, "1-cold-start", "1 cold start", false, func(t *testing.T, r *row) { s.coldStart(t, ctx, upStart, r) }) {
		t.Fatal("the cluster does not serve; the other scenarios need it")
	}
	scenarios := []struct {
		name, label string
		run         func(*testing.T, context.Context, *row)
	}{
		{"2-node-loss", "2 node loss", s.nodeLoss},
		{"3-zookeeper-loss", "3 zookeeper loss", s.zkLoss},
		{"4-upgrade", "4 upgrade under load", s.upgrade},
		{"5-corrupt-version", "5 corrupt version", s.corruptVersion},
		{"6-network-partition", "6 network partition", s.partition},
		{"7-full-restart", "7 full restart", s.fullRestart},
		{"8-corrupt-then-restart", "8 corrupt newest, full restart", s.corruptThenRestart},
		{"9-s3-outage", "9 S3 down 30 s", s.s3Outage},
		{"10-sparkey-db", "10 Sparkey db beside", s.sparkeyDB},
		{"11-rolling-rewrite", "11 rolling rewrite", s.rollingRewrite},
		{"12-parquet-db", "12 Parquet db beside", s.parquetDB},
		{"13-no-zk-credential", "13 no ZK credential", s.noZKCredential},
		{"14-rogue-storaged", "14 rogue storaged (CA)", s.rogueStoraged},
		{"15-cert-rotation", "15 cert rotation", s.rotateCerts},
	}
	for _, sc := range scenarios {
		s.scenario(t, sc.name, sc.label, true, func(t *testing.T, r *row) { sc.run(t, ctx, r) })
	}
}

// scenario runs one scenario as a subtest and adds its row to the table,
// also when it fails. With heal, the cluster is healed first.
func (s *suite) scenario(t *testing.T, name, label string, heal bool, f func(*testing.T, *row)) bool {
	return t.Run(name, func(t *testing.T) {
		r := &row{name: label}
		defer func() {
			r.ok = !t.Failed()
			if !r.ok && r.note == "" {
				r.note = "see the test log"
			}
			s.rep.add(*r)
		}()
		if heal {
			s.heal(t, context.Background())
		}
		f(t, r)
	})
}
