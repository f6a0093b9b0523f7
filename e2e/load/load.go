package load

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"sort"
	"sync"
	"time"

	"spangle/shared/wire"
)

// Options configures Start and Sweep. Zero values are the defaults noted.
type Options struct {
	// Base is routerd's URL (http://host:port, or https:// with TLS);
	// required.
	Base string
	// TLS is the client config for an https Base (the cluster's CA and a
	// client certificate); nil for http.
	TLS *tls.Config
	// DB is the database read; required.
	DB string
	// Keys is how many keys there are; Key(i) for i < Keys are read.
	Keys int
	// Key names the i-th key; required.
	Key func(i int) string
	// Value is the value key must have in version; required.
	Value func(version, key string) string
	// Readers is how many readers run at once; default 4.
	Readers int
	// RequestTimeout bounds one read; default 5 s.
	RequestTimeout time.Duration
}

func (o *Options) fill() {
	if o.Readers <= 0 {
		o.Readers = 4
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = 5 * time.Second
	}
}

// Failure is one failed read.
type Failure struct {
	At     time.Time
	Key    string
	Status int
	Detail string
}

func (f Failure) String() string {
	return fmt.Sprintf("%s %s: status %d: %s", f.At.Format("15:04:05.000"), f.Key, f.Status, f.Detail)
}

// Result is what the readers saw.
type Result struct {
	Reads  int
	Failed int
	// Failures holds the first failures and Last the latest one.
	Failures []Failure
	Last     Failure
	// Regressions counts answers whose version was older than one the
	// same reader had seen before.
	Regressions       int
	RegressionSamples []string
	// Versions counts good answers per version; FirstSeen is when any
	// reader first got each, AllSeen when the last reader did.
	Versions  map[string]int
	FirstSeen map[string]time.Time
	AllSeen   map[string]time.Time
	// ProxiedTo counts answers per storaged node that gave them.
	ProxiedTo map[string]int
	Statuses  map[int]int
	latencies []time.Duration
	Start     time.Time
	End       time.Time
}

// Quantile returns the q-quantile (0..1) of the read latencies.
func (r *Result) Quantile(q float64) time.Duration {
	if len(r.latencies) == 0 {
		return 0
	}
	i := int(q * float64(len(r.latencies)-1))
	return r.latencies[i]
}

// FailedAfter counts failed reads at or after t (only Failures sampled
// are kept, so the count is exact only while Failed <= maxSamples).
func (r *Result) FailedAfter(t time.Time) int {
	n := 0
	for _, f := range r.Failures {
		if !f.At.Before(t) {
			n++
		}
	}
	if r.Failed > len(r.Failures) && !r.Last.At.Before(t) {
		n += r.Failed - len(r.Failures)
	}
	return n
}

// maxSamples bounds the failures and regressions kept as examples.
const maxSamples = 200

// reader is one reader's record; only its goroutine writes it until Stop.
type reader struct {
	Result
	last string
	seen map[string]time.Time
}

// Run is a running load.
type Run struct {
	cancel context.CancelFunc
	client *http.Client
	wg     sync.WaitGroup
	rs     []*reader
	start  time.Time

	mu        sync.Mutex
	firstSeen map[string]time.Time // guarded by mu
	seenBy    map[string]int       // readers that have seen a version; guarded by mu
}

// Start runs readers that loop over every key until Stop.
func Start(ctx context.Context, o Options) *Run {
	o.fill()
	ctx, cancel := context.WithCancel(ctx)
	// Readers start at different keys and stride by a prime, so they
	// spread over partitions.
	r := startReaders(ctx, o, func(i, n int) (int, bool) {
		return (i*(o.Keys/o.Readers) + n*7919) % o.Keys, true
	})
	r.cancel = cancel
	return r
}

// Sweep reads every key once, spread over the readers, and returns what
// they saw.
func Sweep(ctx context.Context, o Options) *Result {
	o.fill()
	r := startReaders(ctx, o, func(i, n int) (int, bool) {
		k := i + n*o.Readers
		return k, k < o.Keys
	})
	r.wg.Wait()
	r.client.CloseIdleConnections()
	return r.merge()
}

// startReaders starts o.Readers readers sharing one keep-alive client;
// the n-th read of reader i is of key keyAt(i, n), until keyAt says no
// more or ctx ends.
func startReaders(ctx context.Context, o Options, keyAt func(i, n int) (int, bool)) *Run {
	r := &Run{start: time.Now(), firstSeen: map[string]time.Time{}, seenBy: map[string]int{},
		client: &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: o.Readers, TLSClientConfig: o.TLS}}}
	for i := 0; i < o.Readers; i++ {
		rd := newReader()
		r.rs = append(r.rs, rd)
		r.wg.Add(1)
		go func(i int) {
			defer r.wg.Done()
			for n := 0; ctx.Err() == nil; n++ {
				k, ok := keyAt(i, n)
				if !ok {
					return
				}
				r.read(ctx, o, rd, k)
			}
		}(i)
	}
	return r
}

func newReader() *reader {
	return &reader{Result: Result{Versions: map[string]int{}, ProxiedTo: map[string]int{}, Statuses: map[int]int{}},
		seen: map[string]time.Time{}}
}

// Stop stops the readers and returns what they saw.
func (r *Run) Stop() *Result {
	r.cancel()
	r.wg.Wait()
	r.client.CloseIdleConnections()
	return r.merge()
}

// FirstSeen reports when a reader first got version, if one has.
func (r *Run) FirstSeen(version string) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.firstSeen[version]
	return t, ok
}

// SeenByAll reports whether every reader has got version.
func (r *Run) SeenByAll(version string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seenBy[version] == len(r.rs)
}

func (r *Run) read(ctx context.Context, o Options, rd *reader, i int) {
	key := o.Key(i)
	rctx, cancel := context.WithTimeout(ctx, o.RequestTimeout)
	defer cancel()
	start := time.Now()
	fail := func(status int, format string, args ...any) {
		if ctx.Err() != nil {
			return // stopping: not a read
		}
		f := Failure{At: time.Now(), Key: key, Status: status, Detail: fmt.Sprintf(format, args...)}
		rd.Reads++
		rd.Failed++
		rd.Last = f
		if len(rd.Failures) < maxSamples {
			rd.Failures = append(rd.Failures, f)
		}
	}
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, o.Base+wire.KeyPath(o.DB, []byte(key)), nil)
	if err != nil {
		fail(0, "%v", err)
		return
	}
	resp, err := r.client.Do(req)
	if err != nil {
		fail(0, "%v", err)
		return
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if ctx.Err() != nil {
		return
	}
	rd.Statuses[resp.StatusCode]++
	v := resp.Header.Get(wire.HeaderVersion)
	switch {
	case err != nil:
		fail(resp.StatusCode, "reading body: %v", err)
		return
	case resp.StatusCode != http.StatusOK:
		fail(resp.StatusCode, "%.200s", body)
		return
	case string(body) != o.Value(v, key):
		fail(resp.StatusCode, "value %.80q under version %q", body, v)
		return
	}
	now := time.Now()
	rd.Reads++
	rd.latencies = append(rd.latencies, now.Sub(start))
	rd.Versions[v]++
	if n := resp.Header.Get(wire.HeaderProxiedTo); n != "" {
		rd.ProxiedTo[n]++
	}
	if v < rd.last {
		rd.Regressions++
		if len(rd.RegressionSamples) < maxSamples {
			rd.RegressionSamples = append(rd.RegressionSamples, fmt.Sprintf("%s: %s after %s", key, v, rd.last))
		}
	} else {
		rd.last = v
	}
	if _, ok := rd.seen[v]; !ok {
		rd.seen[v] = now
		r.mu.Lock()
		if _, ok := r.firstSeen[v]; !ok {
			r.firstSeen[v] = now
		}
		r.seenBy[v]++
		r.mu.Unlock()
	}
}

// merge sums the readers' records; the readers must have stopped.
func (r *Run) merge() *Result {
	out := &Result{Versions: map[string]int{}, FirstSeen: map[string]time.Time{}, AllSeen: map[string]time.Time{},
		ProxiedTo: map[string]int{}, Statuses: map[int]int{}, Start: r.start, End: time.Now()}
	for _, rd := range r.rs {
		out.Reads += rd.Reads
		out.Failed += rd.Failed
		out.Failures = append(out.Failures, rd.Failures...)
		if rd.Last.At.After(out.Last.At) {
			out.Last = rd.Last
		}
		out.Regressions += rd.Regressions
		out.RegressionSamples = append(out.RegressionSamples, rd.RegressionSamples...)
		for v, n := range rd.Versions {
			out.Versions[v] += n
		}
		for v, t := range rd.seen {
			if f, ok := out.FirstSeen[v]; !ok || t.Before(f) {
				out.FirstSeen[v] = t
			}
			if a, ok := out.AllSeen[v]; !ok || t.After(a) {
				out.AllSeen[v] = t
			}
		}
		for n, c := range rd.ProxiedTo {
			out.ProxiedTo[n] += c
		}
		for s, c := range rd.Statuses {
			out.Statuses[s] += c
		}
		out.latencies = append(out.latencies, rd.latencies...)
	}
	for v := range out.AllSeen {
		if seenBy := countSeen(r.rs, v); seenBy < len(r.rs) {
			delete(out.AllSeen, v)
		}
	}
	sort.Slice(out.Failures, func(i, j int) bool { return out.Failures[i].At.Before(out.Failures[j].At) })
	sort.Slice(out.latencies, func(i, j int) bool { return out.latencies[i] < out.latencies[j] })
	return out
}

func countSeen(rs []*reader, v string) int {
	n := 0
	for _, rd := range rs {
		if _, ok := rd.seen[v]; ok {
			n++
		}
	}
	return n
}
