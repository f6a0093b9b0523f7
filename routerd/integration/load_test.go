package integration

import (
	"context"
	"io"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// loadResult is what one load run measured.
type loadResult struct {
	requests, errors int64
	elapsed          time.Duration
	latencies        []time.Duration // one per request, unsorted
}

func (r loadResult) rps() float64 { return float64(r.requests) / r.elapsed.Seconds() }

func (r loadResult) percentile(p float64) time.Duration {
	if len(r.latencies) == 0 {
		return 0
	}
	l := append([]time.Duration(nil), r.latencies...)
	sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
	return l[int(float64(len(l)-1)*p)]
}

// newLoadClient is the load tool's client: keep-alive, one connection per
// worker.
func newLoadClient(workers int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy: nil, MaxIdleConnsPerHost: workers, MaxConnsPerHost: workers, DisableCompression: true,
	}}
}

// runLoad sends GETs of url(i) from workers goroutines for d. With rate >
// 0 the load is open: requests start at that total rate whatever the
// latency (for "p99 at half load"); with 0 each worker sends as fast as
// answers come (for throughput). check, if set, judges each answer.
func runLoad(client *http.Client, workers int, d time.Duration, rate float64,
	url func(i int64) string, check func(*http.Response, []byte) bool) loadResult {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var next, errs atomic.Int64
	var mu sync.Mutex
	var lats []time.Duration
	// Open load: worker w sends at start + (w + k*workers) * period, and
	// a request's latency counts from when it was due, so that a stall
	// shows as the wait it caused (no coordinated omission).
	var period time.Duration
	if rate > 0 {
		period = time.Duration(float64(time.Second) / rate)
	}
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := make([]time.Duration, 0, 1<<14)
			buf := make([]byte, 0, 512)
			due := start.Add(time.Duration(w) * period)
			for ctx.Err() == nil {
				t0 := time.Now()
				if period > 0 {
					if d := time.Until(due); d > 0 {
						time.Sleep(d)
					}
					t0 = due
					due = due.Add(time.Duration(workers) * period)
					if ctx.Err() != nil {
						break
					}
				}
				i := next.Add(1)
				resp, err := client.Get(url(i))
				if err != nil {
					if ctx.Err() == nil {
						errs.Add(1)
					}
					continue
				}
				buf = buf[:0]
				b, err := readAll(resp.Body, buf)
				resp.Body.Close()
				local = append(local, time.Since(t0))
				if err != nil || (check != nil && !check(resp, b)) {
					errs.Add(1)
				}
			}
			mu.Lock()
			lats = append(lats, local...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return loadResult{requests: int64(len(lats)), errors: errs.Load(), elapsed: time.Since(start), latencies: lats}
}

func readAll(r io.Reader, buf []byte) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}
