package server

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"spangle/shared/source"
	"spangle/shared/wire"
	"spangle/storaged/internal/testutil"
	"spangle/storaged/store"
	"spangle/storaged/versions"
)

// benchBlockSize is the table block size (0: the default, 4 KiB).
var benchBlockSize = 0

const (
	benchKeys        = 1_000_000
	benchConcurrency = 32
)

// serve runs h on a loopback listener until the benchmark ends.
func serve(b *testing.B, h http.Handler) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	hs := &http.Server{Handler: h}
	go hs.Serve(l)
	b.Cleanup(func() { hs.Close() })
	return l.Addr().String()
}

// loadClient is a minimal HTTP/1.1 keep-alive client, light like wrk, so
// the load tool takes as little of the CPU as it can.
type loadClient struct {
	conn net.Conn
	r    *bufio.Reader
	req  []byte
}

func dial(addr string) (*loadClient, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &loadClient{conn: c, r: bufio.NewReaderSize(c, 16<<10)}, nil
}

var contentLength = []byte("content-length:")

// get sends GET path and reads the answer; it returns the status.
func (c *loadClient) get(path []byte) (int, error) {
	c.req = append(append(append(c.req[:0], "GET "...), path...), " HTTP/1.1\r\nHost: bench\r\n\r\n"...)
	if _, err := c.conn.Write(c.req); err != nil {
		return 0, err
	}
	line, err := c.r.ReadSlice('\n')
	if err != nil || len(line) < 12 {
		return 0, fmt.Errorf("status line %q: %v", line, err)
	}
	code, _ := strconv.Atoi(string(line[9:12]))
	n := 0
	for {
		line, err = c.r.ReadSlice('\n')
		if err != nil {
			return 0, err
		}
		if len(line) <= 2 {
			break
		}
		if len(line) > len(contentLength) && bytes.EqualFold(line[:len(contentLength)], contentLength) {
			n, _ = strconv.Atoi(string(bytes.TrimSpace(line[len(contentLength):])))
		}
	}
	_, err = c.r.Discard(n)
	return code, err
}

// hammer sends total GETs of random keys from conc connections as fast
// as they are answered, and returns the requests per second.
func hammer(b *testing.B, addr string, paths [][]byte, total, conc int) float64 {
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < conc; w++ {
		c, err := dial(addr)
		if err != nil {
			b.Fatal(err)
		}
		wg.Add(1)
		go func(seed int64) {
			defer wg.Done()
			defer c.conn.Close()
			rng := rand.New(rand.NewSource(seed))
			for next.Add(1) <= int64(total) {
				if code, err := c.get(paths[rng.Intn(len(paths))]); err != nil || code != 200 {
					b.Errorf("GET: %d %v", code, err)
					return
				}
			}
		}(int64(w))
	}
	wg.Wait()
	return float64(total) / time.Since(start).Seconds()
}

// paced sends GETs at rate per second in total, spread over conc
// connections, for d, and returns the latencies.
func paced(b *testing.B, addr string, paths [][]byte, rate float64, conc int, d time.Duration, sinceDue bool) []time.Duration {
	var mu sync.Mutex
	var lat []time.Duration
	var wg sync.WaitGroup
	interval := time.Duration(float64(conc) / rate * float64(time.Second))
	for w := 0; w < conc; w++ {
		c, err := dial(addr)
		if err != nil {
			b.Fatal(err)
		}
		wg.Add(1)
		go func(seed int64) {
			defer wg.Done()
			defer c.conn.Close()
			rng := rand.New(rand.NewSource(seed))
			var mine []time.Duration
			end := time.Now().Add(d)
			due := time.Now().Add(time.Duration(rng.Int63n(int64(interval))))
			for due.Before(end) {
				time.Sleep(time.Until(due))
				t0 := time.Now()
				if code, err := c.get(paths[rng.Intn(len(paths))]); err != nil || code != 200 {
					b.Errorf("GET: %d %v", code, err)
					return
				}
				// Latency counts from when the request was due, so a
				// stall is not hidden (no coordinated omission).
				from := due
				if !sinceDue || t0.Before(due) {
					from = t0
				}
				mine = append(mine, time.Since(from))
				due = due.Add(interval)
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}(int64(w))
	}
	wg.Wait()
	slices.Sort(lat)
	return lat
}

// BenchmarkGET compares storaged's lookups with a trivial net/http server
// answering a constant 100-byte body, same load loop, 32 connections on
// loopback, random keys of a 1M-key 8-file version. Then it measures
// latency at half of storaged's throughput. b.N is the requests per
// server per round.
func BenchmarkGET(b *testing.B) {
	root := testutil.BenchDataset(b, benchKeys, 8, true)
	src, _ := source.Open(root, source.Options{})
	st, _ := store.Open(b.TempDir())
	vopts := versions.Options{Source: src, Store: st}
	vopts.Loader.Build.NoSync = true
	vopts.Loader.Build.BlockSize = benchBlockSize
	m, _ := versions.New(vopts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	b.Cleanup(func() { cancel(); <-done })
	for m.CurrentVersion("bench") == "" {
		time.Sleep(10 * time.Millisecond)
	}
	srv, err := New(Options{Versions: m, Views: m.Views()})
	if err != nil {
		b.Fatal(err)
	}
	body := bytes.Repeat([]byte("x"), 100)
	trivial := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) })
	sAddr, tAddr := serve(b, srv), serve(b, trivial)
	paths := make([][]byte, benchKeys)
	for i := range paths {
		paths[i] = []byte(wire.KeyPath("bench", testutil.BenchKey(i)))
	}
	n := max(b.N, 20000)
	hammer(b, sAddr, paths, n/4, benchConcurrency) // warm up both
	hammer(b, tAddr, paths, n/4, benchConcurrency)
	b.ResetTimer()
	var sRate, tRate float64
	for round := 0; round < 3; round++ { // interleaved, best of 3
		tRate = max(tRate, hammer(b, tAddr, paths, n, benchConcurrency))
		sRate = max(sRate, hammer(b, sAddr, paths, n, benchConcurrency))
	}
	b.StopTimer()
	lat := paced(b, sAddr, paths, sRate/2, benchConcurrency, 3*time.Second, false)
	latDue := paced(b, sAddr, paths, sRate/2, benchConcurrency, 3*time.Second, true)
	// The same pacing against the trivial server: what the machine and
	// the load tool alone cost.
	latTrivial := paced(b, tAddr, paths, sRate/2, benchConcurrency, 3*time.Second, false)
	b.ReportMetric(sRate, "storaged-req/s")
	b.ReportMetric(tRate, "trivial-req/s")
	b.ReportMetric(sRate/tRate, "ratio")
	if len(lat) > 0 {
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs@half")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs@half")
	}
	if len(latTrivial) > 0 {
		b.ReportMetric(float64(latTrivial[len(latTrivial)*99/100].Microseconds()), "trivial-p99-µs@same-rate")
	}
	if len(latDue) > 0 {
		b.ReportMetric(float64(latDue[len(latDue)*99/100].Microseconds()), "p99-from-due-µs@half")
	}
}
