package server

import (
	"reflect"
	"strconv"
	"strings"
	"testing"

	"spangle/shared/h1fast/h1fasttest"
	"spangle/shared/wire"
)

// Every batch the fast path takes is answered as net/http answers it
// through ServeHTTP: the same status, body, Content-Length and headers
// (Date aside), in JSON and in the compact form, pinned and not, with
// keys this node does not hold, bad bodies (400, 413), an unknown db and
// version, and the 503 of a node over MaxInflight; a GET after them is
// still the loop's. The POSTs it leaves to net/http (chunked, over
// batch_max_bytes) still get net/http's answer on the same connection.
func TestFastPathBatchesAnswerAsServeHTTP(t *testing.T) {
	h := newBatchServer(t, []int{0, 1}, Options{BatchLimits: wire.BatchLimits{MaxKeys: 20, MaxBytes: 64 << 10}})
	srv := h.(*Server)
	addr, fast := serveFast(t, srv)
	fc := h1fasttest.Dial(t, addr)
	hc := h1fasttest.Dial(t, addr)
	if resp, _ := roundTrip(t, hc, "GET", "/odd", []string{"Accept", "application/json"}, ""); resp.StatusCode != 200 {
		t.Fatalf("status page: %d", resp.StatusCode)
	} // hc is net/http's from here on
	var keys [][]byte
	for _, r := range oddRecords() {
		keys = append(keys, r.Key)
	}
	all := batchBody(append(keys, []byte("nope"), []byte("a/b/c"))...)
	many := strings.Repeat("k\n", 10) + strings.Repeat("j\n", 11) // 21 lines, 11 repeated
	over := ""
	for i := range 21 {
		over += "k" + strconv.Itoa(i) + "\n"
	}
	type batchCase struct {
		target, body string
		hdr          []string
		fast         bool
	}
	cases := []batchCase{
		{"/odd", all, nil, true},
		{"/odd", all, []string{"Accept", wire.BatchAccept}, true},
		{"/odd", all, []string{"Accept", "application/json, " + wire.ContentTypeBatchBinary + ";q=0.5"}, true},
		{"/odd", all, []string{wire.HeaderVersion, "v1", "Accept", wire.BatchAccept}, true},
		{"/odd", all, []string{wire.HeaderVersion, "v9"}, true},
		{"/odd", batchBody([]byte("a/b/c"), []byte("/")), []string{"Connection", "keep-alive"}, true},
		{"/odd", many, nil, true},
		{"/odd", over, nil, true},
		{"/odd", "", nil, true},
		{"/odd", "a\n\nb\n", nil, true},
		{"/odd", "%zz\n", nil, true},
		{"/odd", strings.Repeat("k", wire.MaxKeyLen+1), nil, true},
		{"/nope", all, nil, true},
		{"/%2e%2e", all, nil, false},
		{"/odd/key", all, nil, false},
		{"/odd", strings.Repeat("k\n", 32<<10+1), nil, false}, // over batch_max_bytes: net/http's 413
	}
	seen := map[int]bool{}
	check := func(tc batchCase) {
		t.Helper()
		hdr := append([]string{"Content-Length", strconv.Itoa(len(tc.body))}, tc.hdr...)
		name := "POST " + tc.target + " " + strings.Join(tc.hdr, ":") + " " + strconv.Quote(tc.body[:min(len(tc.body), 20)])
		before := fast.Load()
		got, gotBody := roundTrip(t, fc, "POST", tc.target, hdr, tc.body)
		if took := fast.Load() > before; took != tc.fast {
			t.Errorf("%s: on the fast path %v, want %v", name, took, tc.fast)
		}
		want, wantBody := roundTrip(t, hc, "POST", tc.target, hdr, tc.body)
		seen[got.StatusCode] = true
		if got.Header.Get("Content-Type") == wire.ContentTypeJSON && got.StatusCode == 200 {
			// The found and failed objects' members come in map order.
			ga, gerr := wire.DecodeBatchAnswer([]byte(gotBody))
			wa, werr := wire.DecodeBatchAnswer([]byte(wantBody))
			if gerr != nil || werr != nil || !reflect.DeepEqual(ga, wa) {
				t.Errorf("%s: fast %+v (%v), net/http %+v (%v)", name, ga, gerr, wa, werr)
			}
			gotBody, wantBody = "", ""
		}
		h1fasttest.SameAnswer(t, name, got, gotBody, want, wantBody)
	}
	for _, tc := range cases {
		if tc.fast {
			check(tc)
		}
	}
	// The connection is still the loop's: routerd sends its single GETs
	// on the connections its batches use.
	before := fast.Load()
	if resp, body := roundTrip(t, fc, "GET", "/odd/a%2Fb%2Fc", nil, ""); resp.StatusCode != 200 || body != "slashes" || fast.Load() != before+1 {
		t.Errorf("a GET after batches: %d %q, on the fast path %v", resp.StatusCode, body, fast.Load() == before+1)
	}
	// Over MaxInflight: 503 with Retry-After on both paths.
	srv.inflight.Add(1 << 20)
	srv.opts.MaxInflight = 1
	check(cases[0])
	srv.inflight.Add(-(1 << 20))
	srv.opts.MaxInflight = 0
	for _, tc := range cases {
		if !tc.fast {
			check(tc)
		}
	}
	for _, code := range []int{200, 400, 404, 413, 503} {
		if !seen[code] {
			t.Errorf("no answer %d among the batches (%v): the cases no longer cover it", code, seen)
		}
	}
}
