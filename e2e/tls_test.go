//go:build e2e

package e2e

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"spangle/e2e/dataset"
	"spangle/e2e/framework"
	"spangle/e2e/load"
	"spangle/shared/certgen"
	"spangle/shared/tlsconfig"
)

// Metrics of shared/tlsconfig the TLS scenarios read.
const (
	metricServerRefused = `spangle_tls_handshakes_refused_total{peer="server"}`
	metricReloadsOK     = `spangle_tls_reloads_total{result="ok"}`
	metricExpiry        = `spangle_tls_cert_expiry_timestamp_seconds`
)

// rogueStoraged: a storaged whose certificate comes from another CA (one
// of its own, made as `spangle certs` makes one, even carrying the peers'
// identity) registers with the cluster's ZooKeeper credential. routerd
// probes it once, refuses its certificate, counts the refusal and leaves
// it out of its map (routerd/vetted). A new version is then published,
// which the rogue builds and publishes too: routerd adopts it on the
// good nodes' partitions alone, the rogue answers no lookup (its own
// request counter stays 0) and the reads go on with no failure.
func (s *suite) rogueStoraged(t *testing.T, ctx context.Context, r *row) {
	const name = "roguetls"
	container := s.c.Project() + "-" + name
	addr := container + ":9599"
	dir := filepath.Join(s.c.CertsDir(), name)
	if err := certgen.WriteSet(dir, certgen.SetOptions{Names: []string{container, "localhost", "127.0.0.1", framework.PeerIdentity}}); err != nil {
		t.Fatal(err)
	}
	// storaged.toml as the cluster's, with the rogue's files.
	conf, err := os.ReadFile(filepath.Join("..", "deploy", "storaged.toml"))
	if err != nil {
		t.Fatal(err)
	}
	mount := framework.CertsMount + "/" + name + "/"
	conf = []byte(strings.ReplaceAll(string(conf), framework.CertsMount+"/", mount))
	if err := certgen.WriteFile(filepath.Join(dir, "storaged.toml"), conf, 0o644); err != nil {
		t.Fatal(err)
	}
	refusedBefore := s.routerdMetric(t, ctx, metricServerRefused)

	base := s.routerURL(t, ctx)
	run := load.Start(ctx, s.loadOptions(base))
	rogue, err := s.extraStoraged(t, ctx, name, nil, "--config", mount+"storaged.toml", "--advertise", addr)
	if err != nil {
		run.Stop()
		t.Fatal(err)
	}
	fail := func(err error) {
		t.Helper()
		logs, _ := s.c.LogsOf(context.WithoutCancel(ctx), rogue)
		lines := strings.Split(logs, "\n")
		if len(lines) > 60 {
			lines = lines[:60]
		}
		t.Logf("the rogue's log begins:\n%s", strings.Join(lines, "\n"))
		run.Stop()
		t.Fatal(err)
	}
	// It registers; routerd probes it once (routerd/vetted), refuses its
	// certificate, counts that, and leaves it out of its map.
	err = framework.WaitFor(ctx, 90*time.Second, 500*time.Millisecond, "routerd refusing the rogue's certificate", func(ctx context.Context) (bool, error) {
		m, err := s.c.Metrics(ctx, framework.Routerd)
		if err != nil {
			return false, err
		}
		n, unverified := metric(m, metricServerRefused), metric(m, "spangle_routerd_nodes_unverified")
		return n > refusedBefore && unverified >= 1, fmt.Errorf("%s %v (before %v), unverified nodes %v", metricServerRefused, n, refusedBefore, unverified)
	})
	if err != nil {
		fail(err)
	}
	// A new version, its values not yet in routerd's cache, is built and
	// published by every node, the rogue too: routerd adopts it on the
	// good nodes' partitions alone and never asks the rogue.
	next := s.nextVersion()
	if err := s.c.Publish(dataset.Spec{Version: next}); err != nil {
		fail(err)
	}
	if err := framework.WaitFor(ctx, 2*time.Minute, 200*time.Millisecond, "readers switching to "+next,
		func(context.Context) (bool, error) { return run.SeenByAll(next), nil }); err != nil {
		fail(err)
	}
	s.current = next
	if status, err := s.get(ctx, base+"/"); err != nil || strings.Contains(status, addr) {
		fail(fmt.Errorf("routerd's status page lists the rogue %s (%v)", addr, err))
	}
	observe(ctx, 5*time.Second)
	res := run.Stop()
	*r = fromResult(r.name, res)
	checkLoad(t, res)
	for node := range res.ProxiedTo {
		if strings.Contains(node, name) {
			t.Errorf("routerd returned answers of the rogue: %v", res.ProxiedTo)
		}
	}
	// The rogue's own count of requests answered, asked with a client of
	// its CA: no lookup ever reached it.
	rogueTLS, err := tlsconfig.Static(tlsconfig.Settings{CertFile: filepath.Join(dir, certgen.ClientFile),
		KeyFile: filepath.Join(dir, certgen.ClientKeyFile), CAFile: filepath.Join(dir, certgen.CAFile)}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	u, err := s.c.ExtraURL(ctx, framework.StoragedServices()[0], rogue)
	if err != nil {
		t.Fatal(err)
	}
	rc := &http.Client{Transport: &http.Transport{Proxy: nil, TLSClientConfig: rogueTLS}, Timeout: 5 * time.Second}
	defer rc.CloseIdleConnections()
	m, err := framework.MetricsWith(ctx, rc, u)
	if err != nil {
		t.Fatal(err)
	}
	answered, found := sumMetric(m, "spangle_storaged_requests_total")
	if !found {
		t.Fatalf("the rogue's metrics hold no spangle_storaged_requests_total:\n%.2000s", m)
	}
	if answered != 0 {
		t.Errorf("the rogue answered %v requests", answered)
	}
	// Nor does the cluster's CA reach it: its port refuses our client.
	if _, err := framework.MetricsWith(ctx, s.c.HTTPClient(), u); err == nil {
		t.Error("a client of the cluster's CA reached the rogue")
	}
}

// rotateCerts: under load, every certificate is replaced by one of a new
// CA, as a CA rotation is done: (1) the CA file becomes the old and the
// new CA, (2) the storaged's, routerd's and the clients' certificates
// become the new CA's, (3) the CA file the new CA alone. The daemons pick
// each step up from the files without a restart (their reload counter
// and the expiry of the certificate they serve change); no read fails.
// A version published before the rotation keeps the reads going to the
// storaged (the served one's values are in routerd's cache), and one
// published after it is built, copied between peers and read on the new
// set alone. Afterwards a client of the old certificate is refused.
func (s *suite) rotateCerts(t *testing.T, ctx context.Context, r *row) {
	live := s.c.CertsDir()
	next := t.TempDir()
	// A validity unlike the first set's, so the expiry metric tells them
	// apart.
	if err := certgen.WriteSet(next, framework.CertOptions(90*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	old := t.TempDir()
	for _, f := range []string{certgen.CAFile, certgen.ClientFile, certgen.ClientKeyFile} {
		copyFile(t, filepath.Join(live, f), filepath.Join(old, f))
	}
	daemons := append(framework.StoragedServices(), framework.Routerd)
	want := map[string]float64{}
	for _, svc := range daemons {
		f := certgen.PeerFile
		if svc == framework.Routerd {
			f = certgen.RouterFile
		}
		want[svc] = float64(notAfter(t, filepath.Join(next, f)).Unix())
	}
	oldCA, newCA := readFile(t, filepath.Join(live, certgen.CAFile)), readFile(t, filepath.Join(next, certgen.CAFile))

	run := load.Start(ctx, s.loadOptions(s.routerURL(t, ctx)))
	stop := func() { run.Stop() }
	// A new version (its values not yet in routerd's cache) makes the
	// reads reach the storaged through the rotation.
	publish := func() {
		t.Helper()
		next := s.nextVersion()
		if err := s.c.Publish(dataset.Spec{Version: next}); err != nil {
			stop()
			t.Fatal(err)
		}
		if err := framework.WaitFor(ctx, 2*time.Minute, 200*time.Millisecond, "readers switching to "+next,
			func(context.Context) (bool, error) { return run.SeenByAll(next), nil }); err != nil {
			stop()
			t.Fatal(err)
		}
		s.current = next
	}
	publish()
	start := time.Now()

	step := func(what string, write func() error, done func(svc string, m string) (bool, error)) {
		t.Helper()
		before := map[string]float64{}
		for _, svc := range daemons {
			m, err := s.c.Metrics(ctx, svc)
			if err != nil {
				stop()
				t.Fatal(err)
			}
			before[svc] = metric(m, metricReloadsOK)
		}
		if err := write(); err != nil {
			stop()
			t.Fatal(err)
		}
		err := framework.WaitFor(ctx, time.Minute, time.Second, what, func(ctx context.Context) (bool, error) {
			for _, svc := range daemons {
				m, err := s.c.Metrics(ctx, svc)
				if err != nil {
					return false, err
				}
				if n := metric(m, metricReloadsOK); n <= before[svc] {
					return false, fmt.Errorf("%s: %s %v, before %v", svc, metricReloadsOK, n, before[svc])
				}
				if ok, err := done(svc, m); !ok {
					return false, err
				}
			}
			return true, nil
		})
		if err != nil {
			stop()
			t.Fatal(err)
		}
		if err := s.c.ReloadTLS(); err != nil {
			stop()
			t.Fatal(err)
		}
		t.Logf("%s: %v after the start", what, time.Since(start).Round(time.Second))
	}
	anyDone := func(string, string) (bool, error) { return true, nil }

	step("every daemon trusting both CAs", func() error {
		return certgen.WriteFile(filepath.Join(live, certgen.CAFile), append(append([]byte(nil), oldCA...), newCA...), 0o644)
	}, anyDone)
	step("every daemon serving the new CA's certificate", func() error {
		for _, p := range [][2]string{{certgen.PeerFile, certgen.PeerKeyFile}, {certgen.RouterFile, certgen.RouterKeyFile},
			{certgen.ClientFile, certgen.ClientKeyFile}} {
			for _, f := range p {
				if err := certgen.WriteFile(filepath.Join(live, f), readFile(t, filepath.Join(next, f)), 0o600); err != nil {
					return err
				}
			}
		}
		return nil
	}, func(svc, m string) (bool, error) {
		got := metric(m, metricExpiry)
		return got == want[svc], fmt.Errorf("%s: %s %v, want %v", svc, metricExpiry, got, want[svc])
	})
	step("every daemon trusting the new CA alone", func() error {
		return certgen.WriteFile(filepath.Join(live, certgen.CAFile), newCA, 0o644)
	}, anyDone)
	took := time.Since(start)
	// A version built and adopted on the new set alone: the storaged
	// copy partitions between them and routerd reads it.
	publish()
	res := run.Stop()
	*r = fromResult(r.name, res)
	r.recovery, r.recoveryOf = took, "rotation start to new CA alone"
	checkLoad(t, res)

	// New connections, on the new set alone: every daemon answers.
	s.c.HTTPClient().CloseIdleConnections()
	for _, svc := range daemons {
		if _, err := s.c.GetHealth(ctx, svc); err != nil {
			t.Errorf("%s over a new connection after the rotation: %v", svc, err)
		}
	}
	// The old client certificate is refused now, even by a client that
	// trusts the new CA.
	oldTLS, err := tlsconfig.Static(tlsconfig.Settings{CertFile: filepath.Join(old, certgen.ClientFile),
		KeyFile: filepath.Join(old, certgen.ClientKeyFile), CAFile: filepath.Join(old, certgen.CAFile)}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(newCA)
	oldTLS.RootCAs = pool
	u, err := s.c.URL(ctx, framework.StoragedServices()[0])
	if err != nil {
		t.Fatal(err)
	}
	oc := &http.Client{Transport: &http.Transport{Proxy: nil, TLSClientConfig: oldTLS}, Timeout: 5 * time.Second}
	if _, err := framework.MetricsWith(ctx, oc, u); err == nil {
		t.Error("storaged still takes the old CA's client certificate")
	}
}

// routerdMetric reads one sample of routerd's metrics (0 when absent).
func (s *suite) routerdMetric(t *testing.T, ctx context.Context, name string) float64 {
	t.Helper()
	m, err := s.c.Metrics(ctx, framework.Routerd)
	if err != nil {
		t.Fatal(err)
	}
	return max(metric(m, name), 0)
}

// sumMetric adds up every sample of a metric family, whatever its labels.
func sumMetric(text, family string) (float64, bool) {
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(family) + `(?:\{[^}]*\})? ([0-9.eE+-]+)$`)
	var sum float64
	ms := re.FindAllStringSubmatch(text, -1)
	for _, m := range ms {
		v, err := strconv.ParseFloat(m[1], 64)
		if err == nil {
			sum += v
		}
	}
	return sum, len(ms) > 0
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	if err := os.WriteFile(to, readFile(t, from), 0o600); err != nil {
		t.Fatal(err)
	}
}

// notAfter is the expiry of the first certificate in a PEM file.
func notAfter(t *testing.T, path string) time.Time {
	t.Helper()
	b, _ := pem.Decode(readFile(t, path))
	if b == nil {
		t.Fatalf("%s: no PEM block", path)
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return c.NotAfter
}
