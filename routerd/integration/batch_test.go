package integration

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"spangle/routerd/config"
	"spangle/shared/versiontest"
	"spangle/shared/wire"
)

// record is one key and value of a hand-made version.
type record struct{ key, value []byte }

// oddRecords are the awkward keys the single GET tests use, and an empty
// and a 100 KB value.
func oddRecords() []record {
	return []record{
		{[]byte("/"), []byte("slash")},
		{[]byte("a/b/c"), []byte("slashes")},
		{[]byte("%"), []byte("percent")},
		{[]byte("100%25"), []byte("escaped-looking")},
		{[]byte(".."), []byte("dotdot")},
		{[]byte("../../etc/passwd"), []byte("traversal")},
		{[]byte("\x00\xff\xfe"), []byte("\x00non-utf8\xff")},
		{[]byte("sp ace\r\n"), []byte("crlf")},
		{[]byte("ünï"), []byte("unicode")},
		{[]byte("empty"), []byte{}},
		{[]byte("big"), bytes.Repeat([]byte("0123456789"), 10<<10)},
	}
}

// writeRecords writes recs as <root>/<db>/<version>, pre-sharded over
// parts files, in place and without _SUCCESS.
func writeRecords(t testing.TB, root, db, version string, parts int, recs []record) {
	t.Helper()
	vr := make([]versiontest.Record, len(recs))
	for i, r := range recs {
		vr[i] = versiontest.Record{Key: r.key, Value: r.value}
	}
	versiontest.For(t).Write(root, db, version, versiontest.Options{Files: parts, InPlace: true, NoSuccess: true}, vr)
}

// postBatch sends a batch of keys to base and decodes the answer; a
// status other than 200 is returned with a nil answer.
func postBatch(client *http.Client, base, db string, keys [][]byte, hdr ...string) (int, *wire.BatchAnswer, error) {
	var body []byte
	for _, k := range keys {
		body = wire.AppendBatchKey(body, k)
	}
	req, err := http.NewRequest("POST", base+"/"+db, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		return resp.StatusCode, nil, err
	}
	a, err := wire.DecodeBatchAnswer(b)
	if err == nil && resp.Header.Get(wire.HeaderVersion) != a.Version {
		err = fmt.Errorf("header version %q, body %q", resp.Header.Get(wire.HeaderVersion), a.Version)
	}
	return resp.StatusCode, a, err
}

// TestBatchOddKeys: keys of every byte and empty and 100 KB values
// round-trip through a batch, on storaged and through routerd.
func TestBatchOddKeys(t *testing.T) {
	root := t.TempDir()
	recs := oddRecords()
	writeRecords(t, root, "odd", "v1", 4, recs)
	a, b := startStoraged(t, root), startStoraged(t, root)
	rd := startRouterd(t, failoverConfig(a, b), pollNodes(t, a, b), "odd")
	client := &http.Client{Transport: &http.Transport{Proxy: nil}}
	defer client.CloseIdleConnections()
	keys := [][]byte{[]byte("no such key")}
	for _, r := range recs {
		keys = append(keys, r.key)
	}
	for _, base := range []string{a.url(), rd.base} {
		code, ans, err := postBatch(client, base, "odd", keys)
		if code != 200 || err != nil {
			t.Fatalf("%s: %d %v", base, code, err)
		}
		if ans.Version != "v1" || len(ans.Found) != len(recs) || len(ans.Failed) != 0 ||
			len(ans.Missing) != 1 || ans.Missing[0] != "no%20such%20key" {
			t.Fatalf("%s: version %q, %d found, missing %q, failed %v", base, ans.Version, len(ans.Found), ans.Missing, ans.Failed)
		}
		for _, r := range recs {
			raw := strings.TrimSuffix(string(wire.AppendBatchKey(nil, r.key)), "\n")
			if v, ok := ans.Found[raw]; !ok || !bytes.Equal(v, r.value) {
				t.Errorf("%s: key %q: found %v, %d bytes, want %d", base, r.key, ok, len(v), len(r.value))
			}
		}
	}
}

// batchReader loops batches of random keys until ctx ends and checks
// each answer: 200, every key found with its version's value, the
// version never going back.
type batchReader struct {
	failureLog
	batches, keys int
	versions      map[string]int
	latencies     []time.Duration
}

func runBatchReaders(ctx context.Context, n, size int, base string, hdr ...string) []*batchReader {
	client := &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: n}, Timeout: 30 * time.Second}
	defer client.CloseIdleConnections()
	out := make([]*batchReader, n)
	var wg sync.WaitGroup
	for r := range out {
		st := &batchReader{versions: map[string]int{}}
		out[r] = st
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 7))
			last := ""
			for ctx.Err() == nil {
				keys := make([][]byte, size)
				for i := range keys {
					keys[i] = []byte(keyName(rng.IntN(testKeys)))
				}
				start := time.Now()
				code, a, err := postBatch(client, base, testDB, keys, hdr...)
				st.latencies = append(st.latencies, time.Since(start))
				st.batches++
				if code != 200 || err != nil {
					st.fail("status %d: %v", code, err)
					continue
				}
				st.versions[a.Version]++
				if a.Version < last {
					st.fail("version went back from %s to %s", last, a.Version)
				}
				last = a.Version
				for raw, reason := range a.Failed {
					st.fail("%s failed: %s", raw, reason)
				}
				for _, k := range keys {
					st.keys++
					raw := strings.TrimSuffix(string(wire.AppendBatchKey(nil, k)), "\n")
					if v, ok := a.Found[raw]; ok && string(v) != valueOf(a.Version, string(k)) {
						st.fail("%s: %q in an answer of version %s", k, v, a.Version)
					} else if !ok && a.Failed[raw] == "" {
						st.fail("%s: not found", k)
					}
				}
			}
		}()
	}
	wg.Wait()
	return out
}

// TestBatchDuringVersionUpgrade: 8 readers send batches while a new
// version arrives; every answer is from one version and no reader's
// versions go back.
func TestBatchDuringVersionUpgrade(t *testing.T) {
	src := source(t, "v1")
	a, b := startStoraged(t, src), startStoraged(t, src)
	rd := startRouterd(t, failoverConfig(a, b), pollNodes(t, a, b), testDB)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan []*batchReader)
	go func() { done <- runBatchReaders(ctx, 8, 50, rd.base) }()
	rollToV2(t, src, rd, a, b)
	cancel()
	rs := <-done
	batches := 0
	for i, r := range rs {
		batches += r.batches
		if len(r.failures) > 0 {
			t.Errorf("reader %d: %q", i, r.failures)
		}
		if r.versions["v2"] == 0 {
			t.Errorf("reader %d never saw v2: %v", i, r.versions)
		}
	}
	t.Logf("%d batches of 50 keys; batches per version %v", batches, rs[0].versions)
	if f := rd.metric(t, `spangle_routerd_batch_key_outcomes_total{outcome="found"}`); f < float64(batches*40) {
		t.Fatalf("routerd counted %v keys found for %d batches", f, batches)
	}
}

// TestBatchFrozenReplica: one of two replicas is frozen (SIGSTOP) under
// batch load; every batch still answers within its deadline (plus what
// the machine adds), and keys the frozen replica kept fail 504 rather
// than hold the batch. (A half-open breaker's probe to the frozen node
// can still cost a key a 504, as it does a single GET.)
func TestBatchFrozenReplica(t *testing.T) {
	const proxyTimeout = time.Second
	src := source(t, "v1")
	a, b := startStoraged(t, src), startStoraged(t, src)
	t.Cleanup(func() { a.Signal(syscall.SIGCONT) })
	cfg := staticConfig(a, b)
	cfg.ProxyTimeout = proxyTimeout
	cfg.ProxyStageTimeout = 200 * time.Millisecond
	rd := startRouterd(t, cfg, pollNodes(t, a, b), testDB)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Second)
	defer cancel()
	time.AfterFunc(time.Second, func() { a.Signal(syscall.SIGSTOP) })
	rs := runBatchReaders(ctx, 8, 50, rd.base)
	var batches int
	var worst time.Duration
	var other []string
	timedOut := 0
	for _, r := range rs {
		batches += r.batches
		for _, l := range r.latencies {
			worst = max(worst, l)
		}
		for _, f := range r.failures {
			if !strings.Contains(f, "failed: 504") {
				other = append(other, f)
			} else {
				timedOut++
			}
		}
	}
	if len(other) > 0 {
		t.Fatalf("failures other than a frozen replica's 504s: %q", other)
	}
	// The batch's own deadline is proxy_timeout plus batch_key_timeout a
	// key, and a quarter of it more before keys waiting only on the
	// frozen replica fail (docs/design.md, "A batch's deadline");
	// writing the answer and a loaded machine's scheduling get half a
	// second more.
	deadline := proxyTimeout + 50*config.DefaultBatchKeyTimeout
	if worst > deadline+deadline/4+500*time.Millisecond {
		t.Fatalf("a batch took %v with a deadline of %v", worst, deadline)
	}
	// The frozen replica was asked: hedges or timeouts show it.
	if h := rd.metric(t, "spangle_routerd_hedges_started_total"); h == 0 && timedOut == 0 {
		t.Fatal("no hedge and no timeout: the frozen replica was never asked, the test proved nothing")
	}
	t.Logf("%d batches of 50 keys with a replica frozen, %d keys timed out; worst %v (proxy_timeout %v); hedges %v; breaker transitions %v",
		batches, int(rd.metric(t, `spangle_routerd_batch_key_outcomes_total{outcome="failed"}`)), worst, proxyTimeout,
		rd.metric(t, "spangle_routerd_hedges_started_total"), rd.metric(t, "spangle_routerd_breaker_transitions_total"))
}

// TestManyBusyBatches (#31): 30 clients send 300-key batches at once
// through a routerd with the default proxy_timeout to two live replicas.
// The replicas are busy, not broken: no key may fail and no breaker may
// open. Nothing here is about latency, so a loaded machine makes the
// batches slower but cannot fail the test.
func TestManyBusyBatches(t *testing.T) {
	const (
		clients = 30
		size    = 300
	)
	src := source(t, "v1")
	a, b := startStoraged(t, src), startStoraged(t, src)
	cfg := staticConfig(a, b)
	if cfg.ProxyTimeout != config.DefaultProxyTimeout {
		t.Fatalf("proxy_timeout %v, want the default", cfg.ProxyTimeout)
	}
	rd := startRouterd(t, cfg, pollNodes(t, a, b), testDB)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rs := runBatchReaders(ctx, clients, size, rd.base)
	batches, keys, failed := 0, 0, 0
	var first []string
	var worst time.Duration
	for _, r := range rs {
		batches += r.batches
		keys += r.keys
		failed += r.failCount
		if len(first) < 5 {
			first = append(first, r.failures[:min(len(r.failures), 5-len(first))]...)
		}
		for _, l := range r.latencies {
			worst = max(worst, l)
		}
	}
	opened := rd.metric(t, `spangle_routerd_breaker_transitions_total`)
	t.Logf("%d batches of %d keys from %d clients: %d keys, %d failures, worst %v, breaker transitions %v, hedges %v",
		batches, size, clients, keys, failed, worst, opened, rd.metric(t, "spangle_routerd_hedges_started_total"))
	if batches < clients {
		t.Fatalf("only %d batches: the load never ran", batches)
	}
	if failed > 0 {
		t.Errorf("%d failures with both replicas answering, first %q", failed, first)
	}
	if opened > 0 {
		t.Errorf("%v breaker transitions with both replicas answering", opened)
	}
}
