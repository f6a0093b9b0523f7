package load

import (
	"context"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"spangle/bench/stats"
)

// serve runs h on a loopback socket for the test.
func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l.Addr().String()
}

func fixed(p string) PathFunc {
	return func(dst []byte, _ *rand.Rand) []byte { return append(dst, p...) }
}

func TestClosedLoopCountsAnswers(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.URL.Path]++
		mu.Unlock()
		w.Write([]byte("0123456789"))
	}))
	keys := func(dst []byte, rng *rand.Rand) []byte { return append(dst, "/db/k"+string(rune('a'+rng.IntN(3)))...) }
	res, err := Run(context.Background(), Options{Addr: addr, Path: keys, Conns: 4, Warmup: 50 * time.Millisecond, Duration: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests == 0 || res.Errors != 0 || int64(len(res.Latencies)) != res.Requests {
		t.Fatalf("requests %d, errors %d (%s), latencies %d", res.Requests, res.Errors, res.FirstError, len(res.Latencies))
	}
	for i := 1; i < len(res.Latencies); i++ {
		if res.Latencies[i] < res.Latencies[i-1] {
			t.Fatal("latencies not sorted")
		}
	}
	mu.Lock()
	defer mu.Unlock()
	total := 0
	for _, p := range []string{"/db/ka", "/db/kb", "/db/kc"} {
		if seen[p] == 0 {
			t.Errorf("path %s never requested: %v", p, seen)
		}
		total += seen[p]
	}
	// The server saw the warm-up too, so at least what was measured.
	if int64(total) < res.Requests || len(seen) != 3 {
		t.Errorf("server saw %v, client measured %d", seen, res.Requests)
	}
	if res.Rate() <= 0 {
		t.Errorf("rate %v", res.Rate())
	}
}

func TestNon200IsAnError(t *testing.T) {
	addr := serve(t, http.NotFoundHandler())
	res, err := Run(context.Background(), Options{Addr: addr, Path: fixed("/db/missing"), Conns: 2, Duration: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 0 || res.Errors == 0 || !strings.Contains(res.FirstError, "404") {
		t.Fatalf("requests %d errors %d first %q; want only errors naming 404", res.Requests, res.Errors, res.FirstError)
	}
}

func TestChunkedAnswerIsAnError(t *testing.T) {
	addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("a"))
		w.(http.Flusher).Flush() // forces chunked encoding
		w.Write([]byte("b"))
	}))
	res, err := Run(context.Background(), Options{Addr: addr, Path: fixed("/x"), Conns: 1, Duration: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 0 || res.Errors == 0 || !strings.Contains(strings.ToLower(res.FirstError), "chunked") {
		t.Fatalf("requests %d errors %d first %q; want errors naming chunked", res.Requests, res.Errors, res.FirstError)
	}
}

// A server that stalls once: the open loop must charge the stall to
// every request that was due during it, not only to the one that waited
// on the server (coordinated omission).
func TestOpenLoopCountsStallsFromTheDueTime(t *testing.T) {
	const stall = 300 * time.Millisecond
	var once sync.Once
	start := time.Now()
	addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if time.Since(start) > 400*time.Millisecond {
			once.Do(func() { time.Sleep(stall) })
		}
		w.Write([]byte("ok"))
	}))
	res, err := Run(context.Background(), Options{Addr: addr, Path: fixed("/k"), Conns: 1, Rate: 100,
		Warmup: 100 * time.Millisecond, Duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// About 100 requests were due; paced, not flooded.
	if res.Requests < 50 || res.Requests > 120 || res.Errors != 0 {
		t.Fatalf("open loop at 100/s for 1s: %d requests, %d errors (%s)", res.Requests, res.Errors, res.FirstError)
	}
	// About 30 requests were due during the stall, so well over 5% of
	// the latencies include part of it.
	if p95 := stats.Percentile(res.Latencies, 0.95); p95 < 50*time.Millisecond {
		t.Fatalf("p95 %v: the stall was charged only to the request that met it", p95)
	}
}

func TestRunNeedsAddrAndPath(t *testing.T) {
	if _, err := Run(context.Background(), Options{Addr: "127.0.0.1:1"}); err == nil {
		t.Fatal("Run without Path succeeded")
	}
}

// TestCountsCollections: a run says how often the generator collected
// garbage while it ran.
func TestCountsCollections(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("0123456789"))
	}))
	defer srv.Close()
	garbage := func([]byte) error {
		runtime.KeepAlive(make([]byte, 1<<20)) // too large for the stack
		return nil
	}
	res, err := Run(context.Background(), Options{Addr: strings.TrimPrefix(srv.URL, "http://"), Path: fixed("/db/k"), Conns: 2,
		Duration: 200 * time.Millisecond, Check: garbage})
	if err != nil || res.Requests < 10 || res.Errors != 0 {
		t.Fatalf("%d requests, %d errors (%s), %v", res.Requests, res.Errors, res.FirstError, err)
	}
	if res.Collections == 0 {
		t.Fatalf("%d requests of 1 MB of garbage each, and no collection counted", res.Requests)
	}
}
