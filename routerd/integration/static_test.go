package integration

import (
	"context"
	"io"
	"net/http"
	"slices"
	"syscall"
	"testing"
	"time"

	"spangle/routerd/config"
	"spangle/shared/wire"
)

// storaged's test knobs (see storaged's flags).
const (
	flagDelay       = "--test-delay"
	flagMaxInflight = "--max-inflight"
)

const (
	testDB    = "data"
	testParts = 8
	testKeys  = 2000
)

// source writes a source root holding testDB at the given versions.
func source(t testing.TB, versions ...string) string {
	root := t.TempDir()
	for _, v := range versions {
		writeVersion(t, root, testDB, v, testParts, testKeys)
	}
	return root
}

// staticConfig is routerd with static discovery of nodes.
func staticConfig(nodes ...*storaged) config.Config {
	cfg := config.Default()
	for _, n := range nodes {
		cfg.Storaged = append(cfg.Storaged, n.url())
	}
	cfg.StoragedPoll = 100 * time.Millisecond
	cfg.CacheSize = 0
	return cfg
}

func get(t testing.TB, client *http.Client, url string, hdr ...string) (int, string, http.Header, time.Duration) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, string(b), resp.Header, time.Since(start)
}

// failoverConfig is staticConfig for the tests of failover, shedding,
// version switches and the cache: their subject is that no read fails or
// goes wrong, not how fast reads are, so a lookup gets seconds (on a loaded 2-core machine under
// -race a plain GET to storaged takes a few hundred ms at its worst, and
// sequins' 100ms default would turn that into 504s). A broken failover
// still shows: a read waiting on a dead or shedding replica outlasts the
// stage timeout and the budget-capped hedges cannot save them all.
func failoverConfig(nodes ...*storaged) config.Config {
	cfg := staticConfig(nodes...)
	cfg.ProxyTimeout = failoverTimeout
	cfg.ProxyStageTimeout = 100 * time.Millisecond
	return cfg
}

const failoverTimeout = 5 * time.Second

// TestSlowReplicaIsHedged: with one replica answering after slowDelay, a
// lookup that goes to it first is hedged to the other after the stage
// timeout, so it costs the stage timeout plus what the fast replica takes
// at that moment. Which lookups were hedged is read from routerd's
// hedges-won counter after each. Each lookup is paired with a direct GET
// to the fast replica made just before it (the baseline: what the machine
// costs right now); the hedged lookups must exceed their baseline by no
// more than the stage timeout plus a margin, 25ms plus the spread of the
// baseline itself (p90 - p50), so that a loaded machine's noise is not
// blamed on routerd while a quiet one holds routerd to a few ms.
func TestSlowReplicaIsHedged(t *testing.T) {
	const (
		slowDelay = 10 * time.Second // beyond any stall of a loaded machine
		stage     = 50 * time.Millisecond
		wantWon   = 8
	)
	src := source(t, "v1")
	slow := startStoraged(t, src, flagDelay, slowDelay.String())
	fast := startStoraged(t, src)
	cfg := staticConfig(slow, fast)
	cfg.ProxyTimeout = 30 * time.Second
	cfg.ProxyStageTimeout = stage
	rd := startRouterd(t, cfg, pollNodes(t, slow, fast), testDB)
	client := &http.Client{Transport: &http.Transport{Proxy: nil}}
	defer client.CloseIdleConnections()

	// routerd prefers the replica with the lower recent latency, so the
	// slow one is tried first only now and then (when its latency is
	// stale): loop until enough lookups were hedged.
	var bases []time.Duration
	var excess []time.Duration // of the hedged lookups, over their baseline
	var worst time.Duration
	deadline := time.Now().Add(90 * time.Second)
	won := rd.metric(t, "spangle_routerd_hedges_won_total")
	n := 0
	for ; n < 100 || len(excess) < wantWon; n++ {
		if time.Now().After(deadline) {
			t.Fatalf("only %d hedged lookups of %d after 90s", len(excess), n)
		}
		key := keyName(n % testKeys)
		path := wire.KeyPath(testDB, []byte(key))
		_, _, _, base := get(t, client, fast.url()+path)
		code, body, hdr, el := get(t, client, rd.base+path)
		if code != 200 || body != valueOf("v1", key) {
			t.Fatalf("%s: %d %q", key, code, body)
		}
		if hdr.Get(wire.HeaderProxiedTo) != fast.addr {
			t.Fatalf("%s answered by the slow replica after %v: it was waited for, not hedged", key, el)
		}
		worst = max(worst, el)
		bases = append(bases, base)
		if w := rd.metric(t, "spangle_routerd_hedges_won_total"); w > won {
			won = w
			excess = append(excess, el-base)
		}
	}
	// Every answer came from the fast replica, so none waited for the
	// slow one; worst is only reported (a loaded machine can stall a
	// lookup for a second or more).
	slices.Sort(bases)
	spread := bases[len(bases)*9/10] - bases[len(bases)/2]
	margin := 25*time.Millisecond + spread
	// The median, so that one descheduled moment does not decide.
	slices.Sort(excess)
	med := excess[len(excess)/2]
	if med > stage+margin {
		t.Fatalf("hedged lookups took a median %v over their baseline, want <= stage timeout %v + %v (25ms + baseline spread %v); all: %v",
			med, stage, margin, spread, excess)
	}
	t.Logf("%d lookups, %d hedged; worst %v; hedged lookups' median excess over baseline %v (bound %v)",
		n, len(excess), worst, med, stage+margin)
}

// TestKill9DuringReads: kill -9 one of two replicas while 8 readers loop;
// hedging is off, so every read that met the dead replica was saved by
// failover alone.
func TestKill9DuringReads(t *testing.T) {
	src := source(t, "v1")
	a := startStoraged(t, src)
	b := startStoraged(t, src)
	cfg := failoverConfig(a, b)
	cfg.HedgeBudget = 0
	rd := startRouterd(t, cfg, pollNodes(t, a, b), testDB)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	time.AfterFunc(time.Second, a.Kill)
	rs := readers(ctx, 8, rd.base, testDB, testKeys)
	reads, failures, samples, _, _ := total(rs)
	if failures > 0 {
		t.Fatalf("%d of %d reads failed after kill -9 of a replica: %v", failures, reads, samples)
	}
	if h := rd.metric(t, "spangle_routerd_hedges_started_total"); h != 0 {
		t.Fatalf("%v hedges with hedging off", h)
	}
	t.Logf("%d reads, none failed; breaker transitions %v", reads, rd.metric(t, "spangle_routerd_breaker_transitions_total"))
}

func TestOverloadedReplicaSheds(t *testing.T) {
	src := source(t, "v1")
	busy := startStoraged(t, src, flagMaxInflight, "1")
	roomy := startStoraged(t, src)
	rd := startRouterd(t, failoverConfig(busy, roomy), pollNodes(t, busy, roomy), testDB)

	// Read for 3s, and on (up to a minute) until the busy replica has
	// shed a few times: on a loaded machine the readers may be too slow
	// to overload it at first.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	go func() {
		defer cancel()
		for time.Since(start) < time.Minute {
			time.Sleep(100 * time.Millisecond)
			if time.Since(start) < 3*time.Second {
				continue
			}
			if n, err := tryScrape(busy.url(), `spangle_storaged_requests_total{code="503"}`); err == nil && n >= 10 {
				return
			}
		}
	}()
	// 32 readers: routerd pipelines a node's GETs on one connection up
	// to 8 at once (routerd/proxy/pipe.go), and storaged counts one
	// lookup at a time per connection, so the busy replica sees a
	// second lookup at once only past 8 outstanding.
	rs := readers(ctx, 32, rd.base, testDB, testKeys)
	el := time.Since(start)
	reads, failures, samples, _, _ := total(rs)
	shed := 0
	for _, r := range rs {
		shed += r.statuses[503]
	}
	if failures > 0 || shed > 0 {
		t.Fatalf("%d failures (%d 503s) of %d reads while a replica had room: %v", failures, shed, reads, samples)
	}
	requests := rd.metric(t, "spangle_routerd_requests_total")
	hedges := rd.metric(t, "spangle_routerd_hedges_started_total")
	windows := el.Seconds()/3 + 1
	if budget := 0.1*requests + 10*windows; hedges > budget {
		t.Fatalf("%v hedges for %v requests, budget %v", hedges, requests, budget)
	}
	busyShed := scrape(t, busy.url(), `spangle_storaged_requests_total{code="503"}`)
	if busyShed == 0 {
		t.Fatal("the busy replica never shed: the test did not overload it")
	}
	t.Logf("%d reads, no 503 seen by readers though the busy replica shed %v; %v hedges for %v requests",
		reads, busyShed, hedges, requests)
}

func TestNewVersionDuringReads(t *testing.T) {
	src := source(t, "v1")
	a := startStoraged(t, src)
	b := startStoraged(t, src)
	rd := startRouterd(t, failoverConfig(a, b), pollNodes(t, a, b), testDB)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan []*readerStats)
	go func() { done <- readers(ctx, 8, rd.base, testDB, testKeys) }()
	rollToV2(t, src, rd, a, b)
	cancel()
	rs := <-done
	reads, failures, samples, down, versions := total(rs)
	if failures > 0 || len(down) > 0 {
		t.Fatalf("%d failures %v, versions went down %v, of %d reads", failures, samples, down, reads)
	}
	for i, r := range rs {
		if r.versions["v2"] == 0 {
			t.Errorf("reader %d never saw v2: %v", i, r.versions)
		}
	}
	t.Logf("%d reads, none failed, none went down: %v", reads, versions)
}

func TestCacheAfterVersionSwitch(t *testing.T) {
	src := source(t, "v1")
	a := startStoraged(t, src)
	cfg := failoverConfig(a)
	cfg.CacheSize = 16 << 20
	rd := startRouterd(t, cfg, pollNodes(t, a), testDB)
	client := &http.Client{Transport: &http.Transport{Proxy: nil}}
	defer client.CloseIdleConnections()
	const n = 300
	for round := 0; round < 2; round++ {
		for i := 0; i < n; i++ {
			key := keyName(i)
			if code, body, _, _ := get(t, client, rd.base+wire.KeyPath(testDB, []byte(key))); code != 200 || body != valueOf("v1", key) {
				t.Fatalf("%s: %d %q", key, code, body)
			}
		}
	}
	if hits := rd.metric(t, "spangle_routerd_cache_hits_total"); hits < n {
		t.Fatalf("%v cache hits on the second round of %d keys", hits, n)
	}
	writeVersion(t, src, testDB, "v2", testParts, testKeys)
	a.Signal(syscall.SIGHUP)
	rd.waitServed(t, testDB, "v2", 60*time.Second)
	for i := 0; i < n; i++ {
		key := keyName(i)
		code, body, hdr, _ := get(t, client, rd.base+wire.KeyPath(testDB, []byte(key)))
		if code != 200 || body != valueOf("v2", key) || hdr.Get(wire.HeaderVersion) != "v2" {
			t.Fatalf("after the switch %s: %d %q (version %q)", key, code, body, hdr.Get(wire.HeaderVersion))
		}
	}
	// A pinned old version is still answered, from its own entries.
	if code, body, _, _ := get(t, client, rd.base+wire.KeyPath(testDB, []byte(keyName(1))), wire.HeaderVersion, "v1"); code != 200 || body != valueOf("v1", keyName(1)) {
		t.Fatalf("pinned v1: %d %q", code, body)
	}
}

// rollToV2 writes v2 of testDB into src under the readers already
// running (after half a second of v1), has the nodes rescan, and waits
// until rd serves v2, and a second more of reads.
func rollToV2(t *testing.T, src string, rd *routerd, nodes ...*storaged) {
	t.Helper()
	time.Sleep(500 * time.Millisecond)
	writeVersion(t, src, testDB, "v2", testParts, testKeys)
	for _, n := range nodes {
		n.Signal(syscall.SIGHUP)
	}
	rd.waitServed(t, testDB, "v2", 60*time.Second)
	time.Sleep(time.Second)
}
