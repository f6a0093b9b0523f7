package integration

import (
	"context"
	"io"
	"net/http"
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

func TestSlowReplicaIsHedged(t *testing.T) {
	src := source(t, "v1")
	slow := startStoraged(t, src, flagDelay, "300ms")
	fast := startStoraged(t, src)
	cfg := staticConfig(slow, fast)
	cfg.ProxyTimeout = time.Second
	cfg.ProxyStageTimeout = 20 * time.Millisecond
	rd := startRouterd(t, cfg, pollNodes(t, slow, fast), testDB)
	client := &http.Client{Transport: &http.Transport{Proxy: nil}}
	defer client.CloseIdleConnections()

	const bound = 20*time.Millisecond + 15*time.Millisecond
	var worst time.Duration
	for i := 0; i < 400; i++ {
		key := keyName(i)
		code, body, hdr, el := get(t, client, rd.base+wire.KeyPath(testDB, []byte(key)))
		if code != 200 || body != valueOf("v1", key) {
			t.Fatalf("%s: %d %q", key, code, body)
		}
		if hdr.Get(wire.HeaderProxiedTo) != fast.addr && el > 300*time.Millisecond {
			t.Fatalf("answered by the slow replica after %v", el)
		}
		worst = max(worst, el)
	}
	if worst > bound {
		t.Fatalf("worst latency %v with a 300ms replica, want <= stage timeout + 15ms = %v", worst, bound)
	}
	t.Logf("worst latency %v; hedges started %v, won %v", worst,
		rd.metric(t, "routerd_hedges_started_total"), rd.metric(t, "routerd_hedges_won_total"))
}

func TestKill9DuringReads(t *testing.T) {
	src := source(t, "v1")
	a := startStoraged(t, src)
	b := startStoraged(t, src)
	rd := startRouterd(t, staticConfig(a, b), pollNodes(t, a, b), testDB)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	time.AfterFunc(time.Second, a.kill)
	rs := readers(ctx, 8, rd.base, testDB, testKeys)
	reads, failures, samples, _, _ := total(rs)
	if failures > 0 {
		t.Fatalf("%d of %d reads failed after kill -9 of a replica: %v", failures, reads, samples)
	}
	t.Logf("%d reads, none failed; breaker transitions %v", reads, rd.metric(t, "routerd_breaker_transitions_total"))
}

func TestOverloadedReplicaSheds(t *testing.T) {
	src := source(t, "v1")
	busy := startStoraged(t, src, flagMaxInflight, "1")
	roomy := startStoraged(t, src)
	rd := startRouterd(t, staticConfig(busy, roomy), pollNodes(t, busy, roomy), testDB)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	start := time.Now()
	rs := readers(ctx, 8, rd.base, testDB, testKeys)
	el := time.Since(start)
	reads, failures, samples, _, _ := total(rs)
	shed := 0
	for _, r := range rs {
		shed += r.statuses[503]
	}
	if failures > 0 || shed > 0 {
		t.Fatalf("%d failures (%d 503s) of %d reads while a replica had room: %v", failures, shed, reads, samples)
	}
	requests := rd.metric(t, "routerd_requests_total")
	hedges := rd.metric(t, "routerd_hedges_started_total")
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
	rd := startRouterd(t, staticConfig(a, b), pollNodes(t, a, b), testDB)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan []*readerStats)
	go func() { done <- readers(ctx, 8, rd.base, testDB, testKeys) }()
	time.Sleep(500 * time.Millisecond)
	writeVersion(t, src, testDB, "v2", testParts, testKeys)
	a.refresh()
	b.refresh()
	rd.waitServed(t, testDB, "v2", 60*time.Second)
	time.Sleep(time.Second)
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
	cfg := staticConfig(a)
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
	if hits := rd.metric(t, "routerd_cache_hits_total"); hits < n {
		t.Fatalf("%v cache hits on the second round of %d keys", hits, n)
	}
	writeVersion(t, src, testDB, "v2", testParts, testKeys)
	a.refresh()
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
