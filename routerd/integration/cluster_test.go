package integration

import (
	"context"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"spangle/routerd/config"
	"spangle/routerd/daemon"
	"spangle/routerd/health"
	"spangle/shared/nodetest"
	"spangle/shared/proctest"
	"spangle/shared/topo"
)

// storagedBin is the storaged binary TestMain builds.
var storagedBin string

func TestMain(m *testing.M) {
	os.Exit(proctest.RunWithBinary(m, "spangle/storaged", &storagedBin))
}

// storaged is one real storaged process.
type storaged struct {
	*proctest.Process
	addr string
}

// handle is the handle on the process's HTTP port.
func (s *storaged) handle() *nodetest.Node { return nodetest.New(s.addr) }

// startStoraged runs the storaged binary on source with extra flags and
// waits until its /healthz answers 200.
func startStoraged(t testing.TB, source string, extra ...string) *storaged {
	t.Helper()
	addr := proctest.FreeAddr(t)
	args := append([]string{"--source", source, "--local-store", t.TempDir(), "--bind", addr}, extra...)
	s := &storaged{Process: proctest.Start(t, storagedBin, args...), addr: addr}
	proctest.WaitHealthy(t, addr, 30*time.Second)
	return s
}

// startClusterStoraged runs storaged in cluster mode against ZooKeeper at
// zkAddr, advertising its loopback address, with extra flags (which win
// over these); it does not wait, since a cluster node is healthy only
// once a version is ACTIVE.
func startClusterStoraged(t testing.TB, zkAddr, cluster, source string, extra ...string) *storaged {
	t.Helper()
	addr := proctest.FreeAddr(t)
	args := append([]string{"--source", source, "--local-store", t.TempDir(), "--bind", addr,
		"--zk", zkAddr, "--cluster", cluster, "--advertise", addr,
		"--time-to-converge", "1s", "--zk-session-timeout", clusterSessionTimeout.String()}, extra...)
	return &storaged{addr: addr, Process: proctest.Start(t, storagedBin, args...)}
}

// clusterSessionTimeout is the cluster nodes' ZooKeeper session timeout:
// how long a killed node stays in the map.
const clusterSessionTimeout = 3 * time.Second

func (s *storaged) url() string { return s.handle().Base }

// routerd is one in-process routerd.
type routerd struct {
	r      *daemon.Routerd
	cancel context.CancelFunc
	base   string
}

// startRouterd runs routerd in-process with cfg (Bind is set here),
// following w if not nil, and waits until it serves waitDB at all.
func startRouterd(t testing.TB, cfg config.Config, w topo.Watcher, waitDB string) *routerd {
	t.Helper()
	rd := startRouterdNoCleanup(t, cfg, w, waitDB)
	t.Cleanup(func() {
		rd.cancel()
		if err := rd.r.Wait(); err != nil {
			t.Errorf("routerd: %v", err)
		}
	})
	return rd
}

// startRouterdNoCleanup is startRouterd for tests that stop routerd
// themselves (rd.cancel, then rd.r.Wait).
func startRouterdNoCleanup(t testing.TB, cfg config.Config, w topo.Watcher, waitDB string) *routerd {
	t.Helper()
	cfg.Bind = "127.0.0.1:0"
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r, err := daemon.Start(ctx, cfg, daemon.Deps{Watcher: w, Health: health.Options{OpenTimeout: 500 * time.Millisecond}})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	rd := &routerd{r: r, cancel: cancel, base: "http://" + r.Addr().String()}
	if waitDB != "" {
		rd.waitServed(t, waitDB, "", 30*time.Second)
	}
	return rd
}

// waitServed waits until routerd serves db at version (any if "").
func (rd *routerd) waitServed(t testing.TB, db, version string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		st := rd.r.Server().Status(db)
		if v := st.DBs[db].Served; v != "" && (version == "" || v == version) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("routerd does not serve %s %q after %v: %+v", db, version, d, st)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// metric sums the samples of one metric on routerd's /metrics.
func (rd *routerd) metric(t testing.TB, name string) float64 {
	t.Helper()
	return scrape(t, rd.base, name)
}

// scrape sums the samples of name (a metric name, or a name with its
// labels as written, e.g. x{code="503"}) on base's /metrics.
func scrape(t testing.TB, base, name string) float64 {
	t.Helper()
	v, err := tryScrape(base, name)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// tryScrape is scrape for goroutines other than the test's.
func tryScrape(base, name string) (float64, error) {
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	sum := 0.0
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, name+" ") || strings.HasPrefix(line, name+"{") {
			f, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			if err == nil {
				sum += f
			}
		}
	}
	return sum, nil
}
