package server

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"spangle/shared/partitioner"
	"spangle/shared/seqfile"
	"spangle/shared/wire"
	"spangle/storaged/internal/testutil"
	"spangle/storaged/table"
	"spangle/storaged/versions"
)

// oddRecords are the awkward keys and values a batch must carry: the
// same kinds the single GET tests use, and an empty and a 100 KB value.
func oddRecords() []testutil.Record {
	big := bytes.Repeat([]byte("0123456789"), 10<<10)
	return []testutil.Record{
		{Key: []byte("/"), Value: []byte("slash")},
		{Key: []byte("a/b/c"), Value: []byte("slashes")},
		{Key: []byte("%"), Value: []byte("percent")},
		{Key: []byte("100%25"), Value: []byte("escaped-looking")},
		{Key: []byte(".."), Value: []byte("dotdot")},
		{Key: []byte("../../etc/passwd"), Value: []byte("traversal")},
		{Key: []byte("\x00\xff\xfe"), Value: []byte("\x00non-utf8\xff")},
		{Key: []byte("sp ace\r\n"), Value: []byte("crlf")},
		{Key: []byte("ünï"), Value: []byte("unicode")},
		{Key: []byte("empty"), Value: []byte{}},
		{Key: []byte("big"), Value: big},
	}
}

// newBatchServer serves db "odd" (v1, 4 partitions) of oddRecords; held,
// if not nil, says which partitions this node holds.
func newBatchServer(t testing.TB, held []int, opts Options) http.Handler {
	h, _ := newBatchServerIn(t, t.TempDir(), held, opts)
	return h
}

// newBatchServerIn is newBatchServer with its local store in storeDir.
func newBatchServerIn(t testing.TB, storeDir string, held []int, opts Options) (http.Handler, *versions.Manager) {
	t.Helper()
	root := t.TempDir()
	testutil.WriteVersion(t, root, "odd", "v1", 4, testutil.Sharded, seqfile.WriterOptions{}, oddRecords())
	m := runManager(t, root, storeDir, held)
	waitActive(t, m, "odd", "v1")
	opts.Versions, opts.Views = m, m.Views()
	opts.Log = zaptest.NewLogger(t)
	srv, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return srv, m
}

func post(h http.Handler, target, body string, hdr ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("POST", target, strings.NewReader(body))
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func batchBody(keys ...[]byte) string {
	var b []byte
	for _, k := range keys {
		b = wire.AppendBatchKey(b, k)
	}
	return string(b)
}

func TestBatchOddKeys(t *testing.T) {
	h := newBatchServer(t, nil, Options{})
	recs := oddRecords()
	var keys [][]byte
	for _, r := range recs {
		keys = append(keys, r.Key)
	}
	keys = append(keys, []byte("no such key"), []byte("/"))
	rec := post(h, "/odd", batchBody(keys...))
	if rec.Code != 200 {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != wire.ContentTypeJSON || rec.Header().Get(wire.HeaderVersion) != "v1" {
		t.Fatalf("Content-Type %q, version %q", ct, rec.Header().Get(wire.HeaderVersion))
	}
	a, err := wire.DecodeBatchAnswer(rec.Body.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if a.Version != "v1" || len(a.Found) != len(recs) || len(a.Failed) != 0 {
		t.Fatalf("answer version %q, %d found, failed %v", a.Version, len(a.Found), a.Failed)
	}
	for _, r := range recs {
		raw := strings.TrimSuffix(batchBody(r.Key), "\n")
		if v, ok := a.Found[raw]; !ok || !bytes.Equal(v, r.Value) {
			t.Errorf("key %q (%s): found %v, %d bytes, want %d", r.Key, raw, ok, len(v), len(r.Value))
		}
	}
	if len(a.Missing) != 1 || a.Missing[0] != "no%20such%20key" {
		t.Fatalf("missing %q", a.Missing)
	}
	// Keys come back as the request wrote them, escaped or not.
	rec = post(h, "/odd", "a/b/c\na%2Fb%2Fc\n%2F\n")
	a, err = wire.DecodeBatchAnswer(rec.Body.Bytes())
	if err != nil || string(a.Found["a/b/c"]) != "slashes" || string(a.Found["a%2Fb%2Fc"]) != "slashes" || string(a.Found["%2F"]) != "slash" {
		t.Fatalf("%v %s", err, rec.Body)
	}
}

func TestBatchContract(t *testing.T) {
	h := newBatchServer(t, nil, Options{BatchLimits: wire.BatchLimits{MaxKeys: 3, MaxBytes: 100}})
	cases := []struct {
		name, target, body string
		hdr                []string
		code               int
		version            string
	}{
		{"pinned", "/odd", "%2F\n", []string{wire.HeaderVersion, "v1"}, 200, "v1"},
		{"pinned not held: 410 names the version served, as a GET", "/odd", "%2F\n", []string{wire.HeaderVersion, "v0"}, 410, "v1"},
		{"no such db", "/nope", "%2F\n", nil, 404, ""},
		{"empty line", "/odd", "a\n\nb\n", nil, 400, ""},
		{"bad escape", "/odd", "%zz\n", nil, 400, ""},
		{"too many keys", "/odd", "a\nb\nc\nd\n", nil, 413, ""},
		{"too large", "/odd", strings.Repeat("k", 101), nil, 413, ""},
		{"a key path", "/odd/key", "a\n", nil, 405, ""},
		{"root", "/", "a\n", nil, 405, ""},
		{"empty batch", "/odd", "", nil, 200, "v1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := post(h, c.target, c.body, c.hdr...)
			if rec.Code != c.code || rec.Header().Get(wire.HeaderVersion) != c.version {
				t.Fatalf("status %d version %q, want %d %q: %s", rec.Code, rec.Header().Get(wire.HeaderVersion), c.code, c.version, rec.Body)
			}
		})
	}
}

// TestBatchPartitionNotHeld: keys of partitions the node does not hold
// are failed with wire.ReasonNotHeld; a batch of only such keys is 421.
func TestBatchPartitionNotHeld(t *testing.T) {
	h := newBatchServer(t, []int{0, 1}, Options{})
	var held, other [][]byte
	for _, r := range oddRecords() {
		if partitioner.Partition(r.Key, 4) <= 1 {
			held = append(held, r.Key)
		} else {
			other = append(other, r.Key)
		}
	}
	if len(held) == 0 || len(other) == 0 {
		t.Fatalf("test data: %d keys held, %d not", len(held), len(other))
	}
	rec := post(h, "/odd", batchBody(append(append([][]byte{}, held...), other...)...))
	a, err := wire.DecodeBatchAnswer(rec.Body.Bytes())
	if rec.Code != 200 || err != nil {
		t.Fatalf("status %d %v: %s", rec.Code, err, rec.Body)
	}
	if len(a.Found) != len(held) || len(a.Failed) != len(other) {
		t.Fatalf("found %d (want %d), failed %v (want %d)", len(a.Found), len(held), a.Failed, len(other))
	}
	for _, reason := range a.Failed {
		if reason != wire.ReasonNotHeld || wire.FailStatus(reason) != http.StatusMisdirectedRequest {
			t.Fatalf("reason %q", reason)
		}
	}
	if rec := post(h, "/odd", batchBody(other...)); rec.Code != http.StatusMisdirectedRequest {
		t.Fatalf("a batch of no held partition: %d, want 421", rec.Code)
	}
}

// FuzzBatchHandler: any body gets 200 with an answer that parses and
// accounts for every distinct key, or 400 or 413; nothing else.
func FuzzBatchHandler(f *testing.F) {
	h := newBatchServer(f, nil, Options{BatchLimits: wire.BatchLimits{MaxKeys: 20, MaxBytes: 2048}})
	for _, s := range []string{"%2F\n..\n", "big\nempty\n", "a\n\nb", "%zz", "%00%FF%FE\n%00%ff%fe\n", "\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		rec := post(h, "/odd", body)
		switch rec.Code {
		case 400, 413:
			return
		case 200:
		default:
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
		keys, err := wire.ParseBatch([]byte(body), wire.BatchLimits{MaxKeys: 20, MaxBytes: 2048})
		if err != nil {
			t.Fatalf("200 for a body ParseBatch refuses: %v", err)
		}
		a, err := wire.DecodeBatchAnswer(rec.Body.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if n := len(a.Found) + len(a.Missing) + len(a.Failed); n != len(keys) || a.Version != "v1" {
			t.Fatalf("%d keys answered of %d, version %q", n, len(keys), a.Version)
		}
		rec = post(h, "/odd", body, "Accept", wire.ContentTypeBatchBinary)
		version, entries, err := wire.DecodeBatchBinary(rec.Body.Bytes())
		if rec.Code != 200 || err != nil || version != "v1" || len(entries) != len(keys) {
			t.Fatalf("compact: status %d, %v, version %q, %d entries of %d keys", rec.Code, err, version, len(entries), len(keys))
		}
	})
}

// TestBatchCorruptBlock: a key whose block fails its checksum is failed
// with the status its GET answers (503, the partition being rebuilt), so
// that a router asks another replica for it; the batch's other keys are
// answered.
func TestBatchCorruptBlock(t *testing.T) {
	storeDir := t.TempDir()
	h, _ := newBatchServerIn(t, storeDir, nil, Options{})
	recs := oddRecords()
	var keys [][]byte
	for _, r := range recs {
		keys = append(keys, r.Key)
	}
	p := partitioner.Partition(recs[0].Key, 4)
	testutil.CorruptFirstBlock(t, filepath.Join(storeDir, "odd", "v1", "p-"+strconv.Itoa(p)))
	rec := post(h, "/odd", batchBody(keys...))
	a, err := wire.DecodeBatchAnswer(rec.Body.Bytes())
	if rec.Code != 200 || err != nil {
		t.Fatalf("status %d %v: %s", rec.Code, err, rec.Body)
	}
	if len(a.Failed) == 0 {
		t.Fatalf("no key failed with partition %d's first block corrupt: found %d", p, len(a.Found))
	}
	for k, reason := range a.Failed {
		if wire.FailStatus(reason) != wire.StatusUnavailable {
			t.Errorf("key %q failed with %q; want the 503 a GET of it answers", k, reason)
		}
	}
	if len(a.Found)+len(a.Missing)+len(a.Failed) != len(recs) || len(a.Found) == 0 {
		t.Fatalf("found %d, missing %d, failed %d of %d keys", len(a.Found), len(a.Missing), len(a.Failed), len(recs))
	}
}

// TestBatchCompactAnswer: a router that asks for the compact answer
// (Accept: wire.ContentTypeBatchBinary) gets an entry for each distinct
// key in the request's order, saying what the JSON answer to the same
// request says; a request that does not ask, as an older routerd's,
// curl's or Envoy's, still gets JSON.
func TestBatchCompactAnswer(t *testing.T) {
	h := newBatchServer(t, []int{0, 1, 2}, Options{})
	var keys [][]byte
	for _, r := range oddRecords() {
		keys = append(keys, r.Key)
	}
	keys = append(keys, []byte("no such key"), []byte("/"))
	body := batchBody(keys...)
	for _, accept := range []string{"", wire.ContentTypeJSON, "*/*", wire.ContentTypeBatchBinary + ";q=0"} {
		rec := post(h, "/odd", body, "Accept", accept)
		if ct := rec.Header().Get("Content-Type"); rec.Code != 200 || ct != wire.ContentTypeJSON {
			t.Fatalf("Accept %q: status %d, Content-Type %q", accept, rec.Code, ct)
		}
	}
	a, err := wire.DecodeBatchAnswer(post(h, "/odd", body).Body.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	rec := post(h, "/odd", body, "Accept", wire.ContentTypeBatchBinary+", "+wire.ContentTypeJSON+";q=0.5")
	if ct := rec.Header().Get("Content-Type"); rec.Code != 200 || ct != wire.ContentTypeBatchBinary || rec.Header().Get(wire.HeaderVersion) != "v1" {
		t.Fatalf("status %d, Content-Type %q, version %q", rec.Code, ct, rec.Header().Get(wire.HeaderVersion))
	}
	if cl := rec.Header().Get("Content-Length"); cl != strconv.Itoa(rec.Body.Len()) {
		t.Fatalf("Content-Length %s for %d bytes", cl, rec.Body.Len())
	}
	version, entries, err := wire.DecodeBatchBinary(rec.Body.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	parsed, _ := wire.ParseBatch([]byte(body), wire.BatchLimits{})
	if version != "v1" || len(entries) != len(parsed) {
		t.Fatalf("version %q, %d entries for %d distinct keys", version, len(entries), len(parsed))
	}
	kinds := map[byte]int{}
	for i, k := range parsed {
		e := entries[i]
		kinds[e.Kind]++
		switch e.Kind {
		case wire.BatchFound:
			if v, ok := a.Found[k.Raw]; !ok || !bytes.Equal(v, e.Value) {
				t.Errorf("key %q: compact value of %d bytes, JSON's %v %d bytes", k.Raw, len(e.Value), ok, len(v))
			}
		case wire.BatchMissing:
			if !slices.Contains(a.Missing, k.Raw) {
				t.Errorf("key %q missing in the compact answer only", k.Raw)
			}
		case wire.BatchFailed:
			if a.Failed[k.Raw] != e.Reason {
				t.Errorf("key %q failed with %q, in JSON %q", k.Raw, e.Reason, a.Failed[k.Raw])
			}
		}
	}
	if kinds[wire.BatchFound] == 0 || kinds[wire.BatchMissing] != 1 || kinds[wire.BatchFailed] == 0 {
		t.Fatalf("kinds %v: want found, one missing and failed (partition 3 not held) keys", kinds)
	}
	// None of its keys held: 421, as in JSON.
	var other [][]byte
	for _, k := range keys {
		if partitioner.Partition(k, 4) == 3 {
			other = append(other, k)
		}
	}
	if rec := post(h, "/odd", batchBody(other...), "Accept", wire.ContentTypeBatchBinary); rec.Code != http.StatusMisdirectedRequest {
		t.Fatalf("compact batch of no held partition: %d, want 421", rec.Code)
	}
}

// TestBatchSlots: batches look keys up a CPU's worth at a time; one
// more waits for a turn, and gives up with its client.
func TestBatchSlots(t *testing.T) {
	srv := newBatchServer(t, nil, Options{}).(*Server)
	for range cap(srv.batchSlots) {
		srv.batchSlots <- struct{}{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req := httptest.NewRequest("POST", "/odd", strings.NewReader("%2F\n")).WithContext(ctx)
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	if rec.Code != wire.StatusUnavailable || ctx.Err() == nil {
		t.Fatalf("a batch with every slot taken: %d (context %v), want 503 once its client left", rec.Code, ctx.Err())
	}
	done := make(chan int)
	go func() { done <- post(srv, "/odd", "%2F\n").Code }()
	select {
	case code := <-done:
		t.Fatalf("answered %d with every slot taken", code)
	case <-time.After(50 * time.Millisecond):
	}
	<-srv.batchSlots
	if code := <-done; code != 200 {
		t.Fatalf("once a slot is free: %d", code)
	}
}

// TestBatchManyKeysReadied: a batch of more keys than one prefetch
// window (found, missing, repeated, in partitions not held), of tables
// read in place, answers
// each key as its single GET does, the first time (its blocks' checksums
// not yet checked: every value from Get) and again (values taken from
// the prefetch), in the compact form and in JSON.
func TestBatchManyKeysReadied(t *testing.T) {
	root := t.TempDir()
	var recs []testutil.Record
	for i := 0; i < 2000; i++ {
		recs = append(recs, testutil.Record{Key: fmt.Appendf(nil, "key-%05d", i), Value: fmt.Appendf(nil, "value %d %s", i, strings.Repeat("v", i%150))})
	}
	testutil.WriteVersion(t, root, "many", "v1", 4, testutil.Sharded, seqfile.WriterOptions{}, recs)
	m := runManagerCache(t, root, t.TempDir(), []int{0, 1, 2}, table.CacheOptions{}) // mapped, as by default
	waitActive(t, m, "many", "v1")
	h, err := New(Options{Versions: m, Views: m.Views(), Log: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	var keys [][]byte
	for i := 0; i < 700; i++ {
		switch {
		case i%50 == 7:
			keys = append(keys, fmt.Appendf(nil, "key-%05dx", i)) // missing
		case i%60 == 9:
			keys = append(keys, keys[i-3]) // repeated
		default:
			keys = append(keys, fmt.Appendf(nil, "key-%05d", (i*37)%2000))
		}
	}
	body := batchBody(keys...)
	parsed, err := wire.ParseBatch([]byte(body), wire.BatchLimits{})
	if err != nil {
		t.Fatal(err)
	}
	single := func(k string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", wire.KeyPath("many", []byte(k)), nil))
		return rec.Code, rec.Body.String()
	}
	for round := range 2 {
		rec := post(h, "/many", body, "Accept", wire.BatchAccept)
		version, entries, err := wire.DecodeBatchBinary(rec.Body.Bytes())
		if rec.Code != 200 || err != nil || version != "v1" || len(entries) != len(parsed) {
			t.Fatalf("round %d: status %d, %v, version %q, %d entries for %d keys", round, rec.Code, err, version, len(entries), len(parsed))
		}
		a, err := wire.DecodeBatchAnswer(post(h, "/many", body).Body.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		kinds := map[byte]int{}
		for i, k := range parsed {
			e := entries[i]
			kinds[e.Kind]++
			code, val := single(k.Key)
			switch {
			case e.Kind == wire.BatchFound && (code != 200 || string(e.Value) != val || string(a.Found[k.Raw]) != val):
				t.Fatalf("round %d: key %q: batch %q, JSON %q, GET %d %q", round, k.Key, e.Value, a.Found[k.Raw], code, val)
			case e.Kind == wire.BatchMissing && (code != 404 || !slices.Contains(a.Missing, k.Raw)):
				t.Fatalf("round %d: key %q missing in the batch, GET %d", round, k.Key, code)
			case e.Kind == wire.BatchFailed && (e.Reason != wire.ReasonNotHeld || a.Failed[k.Raw] != e.Reason || code != wire.StatusNotHeld):
				t.Fatalf("round %d: key %q failed %q (JSON %q), GET %d", round, k.Key, e.Reason, a.Failed[k.Raw], code)
			}
		}
		if kinds[wire.BatchFound] == 0 || kinds[wire.BatchMissing] == 0 || kinds[wire.BatchFailed] == 0 {
			t.Fatalf("round %d: kinds %v, want found, missing and failed (partition 3 not held) keys", round, kinds)
		}
	}
}
