package integration

import (
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"testing"
	"time"

	"spangle/shared/wire"
)

// The benchmarks compare routerd with its peers in one run, with one load
// tool (runLoad), alternating the targets so that drift of the machine
// hits both. Run them with:
//
//	go test -run XXX -bench . -benchtime 1x ./routerd/integration/
//
// Each reports requests per second of both targets, their ratio, and
// routerd's p50/p99 at half its throughput.

const (
	benchWorkers = 16
	benchRound   = 2 * time.Second
	benchRounds  = 3
)

func serveLocal(b *testing.B, h http.Handler) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(l)
	b.Cleanup(func() { srv.Close() })
	return "http://" + l.Addr().String()
}

// compare loads a and b alternately and reports both rates and a/b.
func compare(b *testing.B, nameA, baseA, nameB, baseB string, keys int) {
	client := newLoadClient(benchWorkers)
	defer client.CloseIdleConnections()
	url := func(base string) func(int64) string {
		return func(i int64) string { return base + wire.KeyPath(testDB, []byte(keyName(int(i)%keys))) }
	}
	ok := func(resp *http.Response, body []byte) bool { return resp.StatusCode == 200 }
	// Warm both (connections, caches).
	runLoad(client, benchWorkers, 500*time.Millisecond, 0, url(baseA), ok)
	runLoad(client, benchWorkers, 500*time.Millisecond, 0, url(baseB), ok)
	var ra, rb loadResult
	for r := 0; r < benchRounds; r++ {
		x := runLoad(client, benchWorkers, benchRound, 0, url(baseA), ok)
		y := runLoad(client, benchWorkers, benchRound, 0, url(baseB), ok)
		ra.requests += x.requests
		ra.errors += x.errors
		ra.elapsed += x.elapsed
		rb.requests += y.requests
		rb.errors += y.errors
		rb.elapsed += y.elapsed
	}
	if ra.errors > 0 || rb.errors > 0 {
		b.Fatalf("errors: %s %d, %s %d", nameA, ra.errors, nameB, rb.errors)
	}
	// Open load at half the rate, each worker on its own connection, so
	// that the tool never queues in its connection pool.
	open := newLoadClient(benchWorkers)
	defer open.CloseIdleConnections()
	half := runLoad(open, benchWorkers, benchRound, ra.rps()/2, url(baseA), ok)
	halfB := runLoad(open, benchWorkers, benchRound, rb.rps()/2, url(baseB), ok)
	if half.errors > 0 || halfB.errors > 0 {
		b.Fatalf("errors at half load: %s %d, %s %d", nameA, half.errors, nameB, halfB.errors)
	}
	b.ReportMetric(ra.rps(), nameA+"-req/s")
	b.ReportMetric(rb.rps(), nameB+"-req/s")
	b.ReportMetric(ra.rps()/rb.rps(), "ratio")
	b.ReportMetric(float64(half.percentile(0.5).Microseconds()), nameA+"-p50-µs@half")
	b.ReportMetric(float64(half.percentile(0.99).Microseconds()), nameA+"-p99-µs@half")
	b.ReportMetric(float64(halfB.percentile(0.99).Microseconds()), nameB+"-p99-µs@half")
	b.ReportMetric(0, "ns/op")
	b.Logf("%s %.0f req/s, %s %.0f req/s, ratio %.3f; at half load: %s (%.0f req/s) p50 %v p99 %v, %s (%.0f req/s) p50 %v p99 %v",
		nameA, ra.rps(), nameB, rb.rps(), ra.rps()/rb.rps(),
		nameA, half.rps(), half.percentile(0.5), half.percentile(0.99),
		nameB, halfB.rps(), halfB.percentile(0.5), halfB.percentile(0.99))
}

// BenchmarkUncachedGET: routerd (cache off) vs httputil.ReverseProxy,
// both in front of the same storaged.
func BenchmarkUncachedGET(b *testing.B) {
	src := source(b, "v1")
	st := startStoraged(b, src)
	cfg := staticConfig(st)
	cfg.CacheSize = 0
	rd := startRouterd(b, cfg, pollNodes(b, st), testDB)
	target, _ := url.Parse(st.url())
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 1024, DisableCompression: true}
	rpBase := serveLocal(b, rp)
	compare(b, "routerd", rd.base, "reverseproxy", rpBase, testKeys)
}

// BenchmarkCacheHitGET: routerd answering from its cache vs a trivial
// net/http server returning a constant body of the same size.
func BenchmarkCacheHitGET(b *testing.B) {
	src := source(b, "v1")
	st := startStoraged(b, src)
	cfg := staticConfig(st)
	cfg.CacheSize = 64 << 20
	rd := startRouterd(b, cfg, pollNodes(b, st), testDB)
	const hot = 1000
	body := []byte(valueOf("v1", keyName(1)))
	trivial := serveLocal(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(body)
	}))
	compare(b, "routerd", rd.base, "trivial", trivial, hot)
	if h := rd.metric(b, "spangle_routerd_cache_misses_total"); h > hot*2 {
		b.Fatalf("%v cache misses for %d hot keys", h, hot)
	}
}
