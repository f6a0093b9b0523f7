package server

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"spangle/routerd/proxy"
	"spangle/shared/partitioner"
	"spangle/shared/topo"
	"spangle/shared/wire"
)

// batchNodes scripts storaged replicas that answer batches as storaged
// does: "<version>:<key>" for every key, missing for keys starting with
// "missing", a node in notHeld fails every key with wire.ReasonNotHeld,
// and one in corrupt fails keys starting with "rot" with a 503, as a
// node whose block of them is being rebuilt.
type batchNodes struct {
	mu      sync.Mutex
	calls   []batchCall
	status  map[string]int // by addr; 0 means answer
	notHeld map[string]bool
	corrupt map[string]bool
	// json makes the nodes answer JSON, as a storaged that does not
	// offer the compact answer; else they answer in it, as storaged
	// does when routerd asks.
	json bool
	// noRecord keeps no calls (benchmarks); pad makes found values at
	// least this long.
	noRecord bool
	pad      int
}

// value is the scripted value of k.
func (f *batchNodes) value(version string, k []byte) []byte {
	v := []byte(version + ":" + string(k))
	for len(v) < f.pad {
		v = append(v, 'v')
	}
	return v
}

type batchCall struct {
	addr string
	keys []string // nil for a single GET
}

func (f *batchNodes) Get(ctx context.Context, addr string, req *proxy.Request) (*proxy.Response, error) {
	f.mu.Lock()
	if !f.noRecord {
		c := batchCall{addr: addr}
		for _, k := range req.Keys {
			c.keys = append(c.keys, string(k))
		}
		f.calls = append(f.calls, c)
	}
	code, notHeld, corrupt, asJSON := f.status[addr], f.notHeld[addr], f.corrupt[addr], f.json
	f.mu.Unlock()
	switch {
	case code != 0:
		return &proxy.Response{Status: code, RetryAfter: "7"}, nil
	case req.Keys == nil:
		return &proxy.Response{Status: 200, Version: req.Version, Body: []byte(req.Version + ":" + string(req.Key))}, nil
	case !asJSON:
		body := wire.AppendBatchBinaryHead(nil, req.Version, len(req.Keys))
		for _, k := range req.Keys {
			switch {
			case notHeld:
				body = wire.AppendBatchFailed(body, wire.ReasonNotHeld)
			case corrupt && strings.HasPrefix(string(k), "rot"):
				body = wire.AppendBatchFailed(body, wire.FailReason(wire.StatusUnavailable, "partition corrupt on this node; being rebuilt"))
			case strings.HasPrefix(string(k), "missing"):
				body = wire.AppendBatchMissing(body)
			default:
				body = wire.AppendBatchFound(body, f.value(req.Version, k))
			}
		}
		return &proxy.Response{Status: 200, Version: req.Version, Body: body, ContentType: wire.ContentTypeBatchBinary}, nil
	}
	a := wire.NewBatchAnswer(req.Version, len(req.Keys))
	for _, k := range req.Keys {
		esc := url.PathEscape(string(k))
		switch {
		case notHeld:
			a.Failed[esc] = wire.ReasonNotHeld
		case corrupt && strings.HasPrefix(string(k), "rot"):
			a.Failed[esc] = wire.FailReason(wire.StatusUnavailable, "partition corrupt on this node; being rebuilt")
		case strings.HasPrefix(string(k), "missing"):
			a.Missing = append(a.Missing, esc)
		default:
			a.Found[esc] = f.value(req.Version, k)
		}
	}
	body, err := a.Encode()
	return &proxy.Response{Status: 200, Version: req.Version, Body: body, ContentType: wire.ContentTypeJSON}, err
}

func (f *batchNodes) batchCalls() []batchCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []batchCall
	for _, c := range f.calls {
		if c.keys != nil {
			out = append(out, c)
		}
	}
	return out
}

func newBatchTestServer(t testing.TB, cacheBytes int64) (*Server, *batchNodes) {
	t.Helper()
	mir := topo.NewMirror()
	mir.Publish(twoNodeMap())
	return newBatchTestServerOn(t, mir, cacheBytes)
}

// newBatchTestServerOn is newBatchTestServer on a given map mirror.
func newBatchTestServerOn(t testing.TB, mir *topo.Mirror, cacheBytes int64) (*Server, *batchNodes) {
	t.Helper()
	f := &batchNodes{status: map[string]int{}, notHeld: map[string]bool{}, corrupt: map[string]bool{}}
	s, err := New(Options{Watcher: mir, Upstream: f, CacheBytes: cacheBytes,
		ProxyTimeout: testProxyTimeout, ProxyStageTimeout: testProxyTimeout / 2,
		BatchLimits: wire.BatchLimits{MaxKeys: 100}})
	if err != nil {
		t.Fatal(err)
	}
	return s, f
}

func postBatch(t testing.TB, s http.Handler, target, body string, hdr ...string) (*httptest.ResponseRecorder, *wire.BatchAnswer) {
	t.Helper()
	r := httptest.NewRequest("POST", target, strings.NewReader(body))
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, r)
	if rec.Code != 200 {
		return rec, nil
	}
	a, err := wire.DecodeBatchAnswer(rec.Body.Bytes())
	if err != nil {
		t.Fatalf("%v: %s", err, rec.Body)
	}
	return rec, a
}

// TestBatchGroupsByReplicaSet: the keys of the partitions that the same
// replicas hold go in one upstream request; the answer is the same
// whether the nodes answer in the compact form or in JSON (an older
// storaged).
func TestBatchGroupsByReplicaSet(t *testing.T) {
	for _, asJSON := range []bool{false, true} {
		s, f := newBatchTestServer(t, 0)
		f.json = asJSON
		var body strings.Builder
		for i := 0; i < 20; i++ {
			fmt.Fprintf(&body, "k%%2F%d\n", i)
		}
		body.WriteString("missing-1\nk/0\n")
		rec, a := postBatch(t, s, "/db", body.String())
		if a == nil || a.Version != "v2" || rec.Header().Get(wire.HeaderVersion) != "v2" {
			t.Fatalf("json %v: status %d: %s", asJSON, rec.Code, rec.Body)
		}
		h := rec.Header()
		if lm := h.Get("Last-Modified"); lm != created.UTC().Format(http.TimeFormat) {
			t.Fatalf("json %v: Last-Modified %q, want the version's creation", asJSON, lm)
		}
		if to := h.Get(wire.HeaderProxiedTo); to != "a:1" && to != "b:1" {
			t.Fatalf("json %v: %s %q, want the one node asked", asJSON, wire.HeaderProxiedTo, to)
		}
		for i := 0; i < 20; i++ {
			if got := string(a.Found[fmt.Sprintf("k%%2F%d", i)]); got != fmt.Sprintf("v2:k/%d", i) {
				t.Fatalf("json %v: key %d: %q", asJSON, i, got)
			}
		}
		// k/0 is k%2F0 spelled another way: both are answered.
		if string(a.Found["k/0"]) != "v2:k/0" || len(a.Missing) != 1 || a.Missing[0] != "missing-1" || len(a.Failed) != 0 {
			t.Fatalf("json %v: answer %+v", asJSON, a)
		}
		// Both partitions are on a:1 and b:1: one request.
		calls := f.batchCalls()
		if len(calls) != 1 || len(calls[0].keys) != 21 {
			t.Fatalf("json %v: %d upstream requests for 2 partitions of one replica set, want 1 of 21 distinct keys: %+v", asJSON, len(calls), calls)
		}
	}

	// Partitions 0 and 1 on {a, b} in either order, 2 on a alone: two
	// requests, never mixing partitions of different replica sets.
	var b topo.Builder
	b.AddNode(topo.Node{Addr: "a:1", ShardID: "a:1"})
	b.AddNode(topo.Node{Addr: "b:1", ShardID: "b:1"})
	b.AddVersion("db", "v1", topo.VersionInfo{NumPartitions: 3, Created: created})
	for p, replicas := range [][]string{{"a:1", "b:1"}, {"b:1", "a:1"}, {"a:1"}} {
		for _, r := range replicas {
			b.AddReplica("db", "v1", p, r)
		}
	}
	mir := topo.NewMirror()
	mir.Publish(b.Build(0))
	s, f := newBatchTestServerOn(t, mir, 0)
	var body strings.Builder
	parts := map[int]int{}
	for i := 0; i < 60; i++ {
		k := fmt.Sprintf("k%d", i)
		parts[partitioner.Partition([]byte(k), 3)]++
		body.WriteString(k + "\n")
	}
	if len(parts) != 3 {
		t.Fatalf("test keys cover partitions %v", parts)
	}
	if _, a := postBatch(t, s, "/db", body.String()); a == nil || len(a.Found) != 60 {
		t.Fatalf("answer %+v", a)
	}
	calls := f.batchCalls()
	if len(calls) != 2 {
		t.Fatalf("%d upstream requests for 2 replica sets: %+v", len(calls), calls)
	}
	for _, c := range calls {
		alone := partitioner.Partition([]byte(c.keys[0]), 3) == 2
		want := parts[0] + parts[1]
		if alone {
			want = parts[2]
			if c.addr != "a:1" {
				t.Errorf("partition 2's keys sent to %s", c.addr)
			}
		}
		for _, k := range c.keys {
			if (partitioner.Partition([]byte(k), 3) == 2) != alone {
				t.Fatalf("one request mixes replica sets: %q", c.keys)
			}
		}
		if len(c.keys) != want {
			t.Fatalf("request of %d keys, want %d", len(c.keys), want)
		}
	}
}

func TestBatchPinnedAndErrors(t *testing.T) {
	s, f := newBatchTestServer(t, 0)
	if _, a := postBatch(t, s, "/db", "x\n", wire.HeaderVersion, "v1"); a == nil || string(a.Found["x"]) != "v1:x" {
		t.Fatalf("pinned v1: %+v", a)
	}
	for _, c := range []struct {
		target, body, version string
		code                  int
	}{
		{"/db", "x\n", "v0", 410},
		{"/nope", "x\n", "", 404},
		{"/half", "x\n", "", 404},
		{"/db", "x\n\ny\n", "", 400},
		{"/db", strings.Repeat("x\n", 101), "", 413},
		{"/db/key", "x\n", "", 405},
	} {
		var hdr []string
		if c.version != "" {
			hdr = []string{wire.HeaderVersion, c.version}
		}
		if rec, _ := postBatch(t, s, c.target, c.body, hdr...); rec.Code != c.code {
			t.Errorf("POST %s (pinned %q): %d, want %d", c.target, c.version, rec.Code, c.code)
		}
	}
	// Every replica sheds: the batch is 503 with Retry-After, as a GET.
	f.status["a:1"], f.status["b:1"] = 503, 503
	rec, _ := postBatch(t, s, "/db", "x\ny\n")
	if rec.Code != 503 || rec.Header().Get("Retry-After") != "7" {
		t.Fatalf("all shedding: %d Retry-After %q", rec.Code, rec.Header().Get("Retry-After"))
	}
	// No replica holds the version after all: 410, as a pinned GET.
	f.status["a:1"], f.status["b:1"] = 410, 410
	if rec, _ := postBatch(t, s, "/db", "x\ny\n", wire.HeaderVersion, "v1"); rec.Code != 410 {
		t.Fatalf("every replica without the version: %d, want 410", rec.Code)
	}
	// The same unpinned: every replica says the db is gone, so the batch
	// is 404 without a version, never 410, as a GET that pinned nothing.
	if rec, _ := postBatch(t, s, "/db", "x\ny\n"); rec.Code != 404 || rec.Header().Get(wire.HeaderVersion) != "" {
		t.Fatalf("unpinned, every replica without the db: %d version %q, want 404 and none",
			rec.Code, rec.Header().Get(wire.HeaderVersion))
	}
	// One replica down: failover answers every key.
	f.status["a:1"], f.status["b:1"] = 502, 0
	if _, a := postBatch(t, s, "/db", "x\ny\nz\n"); a == nil || len(a.Found) != 3 {
		t.Fatalf("one replica down: %+v", a)
	}
}

// TestBatchRetriesNotHeld: a replica that answers "partition not held"
// for keys has them asked of the other replica.
func TestBatchRetriesNotHeld(t *testing.T) {
	s, f := newBatchTestServer(t, 0)
	f.notHeld["a:1"] = true
	for round := 0; round < 5; round++ {
		_, a := postBatch(t, s, "/db", "x\ny\nz\nw\n")
		if a == nil || len(a.Found) != 4 || len(a.Failed) != 0 {
			t.Fatalf("round %d: %+v", round, a)
		}
	}
	askedA := false
	for _, c := range f.batchCalls() {
		askedA = askedA || c.addr == "a:1"
	}
	if !askedA {
		t.Fatal("the replica without the partition was never asked: the retry went untested")
	}
	// Both replicas lack it: the keys fail, the batch does not.
	f.notHeld["b:1"] = true
	_, a := postBatch(t, s, "/db", "x\ny\n")
	if a == nil || len(a.Failed) != 2 || wire.FailStatus(a.Failed["x"]) != 502 {
		t.Fatalf("no replica holds it: %+v", a)
	}
}

// TestBatchRetriesUnavailableKeys: a key one replica cannot answer now
// (a 503 in the batch, its block being rebuilt) is asked of another; when
// every replica says so, the key keeps that 503, not a 502.
func TestBatchRetriesUnavailableKeys(t *testing.T) {
	s, f := newBatchTestServer(t, 0)
	f.corrupt["a:1"] = true
	for round := 0; round < 5; round++ {
		_, a := postBatch(t, s, "/db", "rot1\nrot2\nfine\n")
		if a == nil || len(a.Found) != 3 || len(a.Failed) != 0 {
			t.Fatalf("round %d: %+v", round, a)
		}
	}
	askedA := false
	for _, c := range f.batchCalls() {
		askedA = askedA || c.addr == "a:1"
	}
	if !askedA {
		t.Fatal("the replica with the corrupt block was never asked: the retry went untested")
	}
	f.corrupt["b:1"] = true
	_, a := postBatch(t, s, "/db", "rot1\nfine\n")
	if a == nil || len(a.Found) != 1 || wire.FailStatus(a.Failed["rot1"]) != wire.StatusUnavailable {
		t.Fatalf("every replica rebuilding: %+v", a)
	}
}

// TestBatchPinHeader: a batch from a db a _PIN holds says so, as a GET.
func TestBatchPinHeader(t *testing.T) {
	mir := topo.NewMirror()
	m := twoNodeMap()
	m.Pins = map[string]topo.Pin{"db": {Version: "v1", Generation: 2}}
	mir.Publish(m)
	s, _ := newBatchTestServerOn(t, mir, 0)
	rec, a := postBatch(t, s, "/db", "x\n")
	if a == nil || a.Version != "v1" || rec.Header().Get(wire.HeaderPin) != "v1" {
		t.Fatalf("pinned batch: %+v %v", a, rec.Header())
	}
}

func TestBatchUsesCache(t *testing.T) {
	s, f := newBatchTestServer(t, 1<<20)
	if rec := do(s, "GET", "/db/hot"); rec.Code != 200 {
		t.Fatalf("GET: %d", rec.Code)
	}
	_, a := postBatch(t, s, "/db", "hot\ncold\n")
	if a == nil || string(a.Found["hot"]) != "v2:hot" || string(a.Found["cold"]) != "v2:cold" {
		t.Fatalf("%+v", a)
	}
	calls := f.batchCalls()
	if len(calls) != 1 || len(calls[0].keys) != 1 || calls[0].keys[0] != "cold" {
		t.Fatalf("upstream batches %+v: the cached key was asked again", calls)
	}
}

// FuzzBatch: any body gets 200 with every distinct spelling answered
// from one version, or 400 or 413.
func FuzzBatch(f *testing.F) {
	s, _ := newBatchTestServer(f, 1<<20)
	for _, b := range []string{"a\nb\n", "k%2F1\nk/1\n", "missing-x\n", "\n", "a\n\n", "%zz", "%00%FF\n..\n"} {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, body string) {
		rec, a := postBatch(t, s, "/db", body)
		switch rec.Code {
		case 400, 413:
			return
		case 200:
		default:
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
		keys, err := wire.ParseBatch([]byte(body), wire.BatchLimits{MaxKeys: 100})
		if err != nil {
			t.Fatalf("200 for a body ParseBatch refuses: %v", err)
		}
		if n := len(a.Found) + len(a.Missing) + len(a.Failed); n != len(keys) || a.Version != "v2" {
			t.Fatalf("%d of %d keys answered, version %q", n, len(keys), a.Version)
		}
		for _, k := range keys {
			if v, ok := a.Found[k.Raw]; ok && string(v) != "v2:"+k.Key {
				t.Fatalf("%q: %q", k.Raw, v)
			}
		}
	})
}

// TestChunks: a group goes upstream in requests of at most chunkKeys
// keys, of even sizes, and within storaged's byte limit.
func TestChunks(t *testing.T) {
	mk := func(n, keyLen int) ([]batchKey, []int) {
		keys := make([]batchKey, n)
		idx := make([]int, n)
		for i := range keys {
			keys[i].esc = strings.Repeat("k", keyLen)
			idx[i] = i
		}
		return keys, idx
	}
	for _, c := range []struct {
		n, keyLen int
		want      []int
	}{
		{1, 5, []int{1}},
		{100, 5, []int{100}},
		{101, 5, []int{51, 50}},
		{300, 5, []int{100, 100, 100}},
		{301, 5, []int{76, 76, 76, 73}},
		// Byte-bound: 60 keys of 32 KiB are over 1 MiB.
		{60, 32 << 10, []int{31, 29}},
	} {
		keys, idx := mk(c.n, c.keyLen)
		var got []int
		seen := 0
		for _, ch := range chunks(keys, idx) {
			got = append(got, len(ch))
			for _, i := range ch {
				if i != seen {
					t.Fatalf("%d keys: chunk %v out of order", c.n, ch)
				}
				seen++
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%d keys of %d bytes: chunks of %v, want %v", c.n, c.keyLen, got, c.want)
		}
	}
}
