package load

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/metrics"
	"slices"
	"sync"
	"time"
)

// PathFunc appends the path of the next request (say, a random key's) to
// dst. Each connection calls it with its own rng.
type PathFunc func(dst []byte, rng *rand.Rand) []byte

// BodyFunc appends the body of the next request to dst, as PathFunc
// does the path.
type BodyFunc func(dst []byte, rng *rand.Rand) []byte

// Options configures a Run. Zero values select the defaults noted.
type Options struct {
	// Addr is the server's host:port.
	Addr string
	// Path gives each request's path; required.
	Path PathFunc
	// Body, when set, makes every request a POST of the body it gives
	// (say, a batch of random keys) to Path's path.
	Body BodyFunc
	// Check, when set, judges every 200 answer's body (say, that a
	// batch failed no key); an error counts the request as failed.
	Check func(body []byte) error
	// Conns is the number of connections, each with one request in
	// flight at a time; default 32.
	Conns int
	// Warmup runs the same load first, excluded from the result;
	// default none.
	Warmup time.Duration
	// Duration is how long the measured part runs; default 1s.
	Duration time.Duration
	// Rate, when positive, makes the run open-loop: requests are due at
	// Rate per second in total, spread evenly over the connections, and a
	// request's latency counts from when it was due whenever the
	// connection was still busy then (so a stall is not hidden). Zero
	// runs closed-loop: each connection sends as soon as it is answered.
	Rate float64
	// Seed makes the key sequence reproducible.
	Seed uint64
	// TLS, when set, makes every connection TLS with this config (one
	// handshake per connection, before the clock starts: they are kept
	// alive).
	TLS *tls.Config
}

// Result is what a Run measured, warm-up excluded.
type Result struct {
	// Requests answered 200 within the measured part.
	Requests int64
	// Errors are failed requests and answers other than 200.
	Errors int64
	// FirstError describes the first error, "" with none.
	FirstError string
	// Elapsed is the measured part's length.
	Elapsed time.Duration
	// Latencies of the measured 200 answers, ascending.
	Latencies []time.Duration
	// Collections are the garbage collections of this process (the
	// generator's own, and whatever else it runs) from the start of the
	// warm-up to the end: each takes CPU from the connections, so it is
	// part of the latencies measured.
	Collections uint64
}

// Rate is the measured throughput in requests per second.
func (r Result) Rate() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Requests) / r.Elapsed.Seconds()
}

// Run loads o.Addr as o says and returns what it measured. It stops early
// with ctx's error when ctx ends.
func Run(ctx context.Context, o Options) (Result, error) {
	if o.Path == nil || o.Addr == "" {
		return Result{}, errors.New("load: Addr and Path are required")
	}
	if o.Conns <= 0 {
		o.Conns = 32
	}
	if o.Duration <= 0 {
		o.Duration = time.Second
	}
	if o.Rate < 0 {
		return Result{}, fmt.Errorf("load: negative rate %v", o.Rate)
	}
	workers := make([]worker, o.Conns)
	for i := range workers {
		workers[i].c = newConn(o.Addr, o.TLS)
		workers[i].c.check = o.Check
	}
	connect(workers)
	// The handshakes' garbage (about 70 KB each, mutual TLS with ML-KEM)
	// is collected now, before the clock, as the handshakes were made
	// before it: otherwise the generator's collector would run in the
	// measured part of a TLS run and not of a plaintext one, and its mark
	// phase, which takes one of a small machine's CPUs, would count as
	// the server's latency.
	runtime.GC()
	gcs := collections()
	start := time.Now()
	measureFrom := start.Add(o.Warmup)
	end := measureFrom.Add(o.Duration)
	var wg sync.WaitGroup
	for i := range workers {
		w := &workers[i]
		w.rng = rand.New(rand.NewPCG(o.Seed, uint64(i)))
		w.from, w.end = measureFrom, end
		if o.Rate > 0 {
			w.interval = time.Duration(float64(o.Conns) / o.Rate * float64(time.Second))
			w.due = start.Add(time.Duration(w.rng.Int64N(int64(w.interval) + 1)))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer w.c.close()
			w.run(ctx, o.Path, o.Body)
		}()
	}
	wg.Wait()
	res := Result{Elapsed: o.Duration, Collections: collections() - gcs}
	for i := range workers {
		w := &workers[i]
		res.Requests += int64(len(w.lat))
		res.Errors += w.errors
		if res.FirstError == "" && w.firstErr != nil {
			res.FirstError = w.firstErr.Error()
		}
		res.Latencies = append(res.Latencies, w.lat...)
	}
	slices.Sort(res.Latencies)
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("load: %w", err)
	}
	return res, nil
}

// collections counts the process's completed garbage collections
// (without stopping the world, as runtime.ReadMemStats would).
func collections() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// connect dials every worker's connection, all at once, before the clock
// starts: a run measures requests on kept-alive connections, as its
// servers are used, not the TCP connects and TLS handshakes of its first
// milliseconds, which in an open-loop run would make the requests due
// meanwhile late (over TLS, 32 full handshakes are about 35 ms of the
// shared CPUs). A connection that fails here is dialled again by its
// first request, whose error is counted then.
func connect(workers []worker) {
	var wg sync.WaitGroup
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = workers[i].c.dial()
		}()
	}
	wg.Wait()
}

// worker drives one connection.
type worker struct {
	c         *conn
	rng       *rand.Rand
	from, end time.Time // measured window
	path      []byte
	body      []byte

	// Open loop only: the gap between requests and when the next is due.
	interval time.Duration
	due      time.Time

	lat      []time.Duration
	errors   int64
	firstErr error
}

func (w *worker) run(ctx context.Context, pathOf PathFunc, bodyOf BodyFunc) {
	var prevDone time.Time
	for ctx.Err() == nil {
		var t0 time.Time
		var from time.Time
		if w.interval > 0 {
			if !w.due.Before(w.end) {
				return
			}
			if d := time.Until(w.due); d > 0 {
				time.Sleep(d)
			}
			t0 = time.Now()
			// Busy past the due time: the server made this request
			// wait, so that counts. Otherwise any lateness is the
			// timer's, not the server's.
			from = t0
			if prevDone.After(w.due) {
				from = w.due
			}
			w.due = w.due.Add(w.interval)
		} else {
			t0 = time.Now()
			if !t0.Before(w.end) {
				return
			}
			from = t0
		}
		w.path = pathOf(w.path[:0], w.rng)
		var err error
		if bodyOf != nil {
			w.body = bodyOf(w.body[:0], w.rng)
			err = w.c.post(w.path, w.body)
		} else {
			err = w.c.get(w.path)
		}
		done := time.Now()
		prevDone = done
		measured := !from.Before(w.from) && done.Before(w.end)
		if err != nil {
			if measured || !errors.Is(err, errStatus) {
				w.errors++
				if w.firstErr == nil {
					w.firstErr = err
				}
			}
			if !errors.Is(err, errStatus) {
				// Do not spin on a dead server.
				time.Sleep(10 * time.Millisecond)
			}
			continue
		}
		if measured {
			w.lat = append(w.lat, done.Sub(from))
		}
	}
}
