package server

import (
	"strconv"
	"strings"
	"testing"

	"spangle/shared/h1fast/h1fasttest"
	"spangle/shared/wire"
)

// A batch on the fast path (shared/h1fast's POST path, whose own tests
// show which POSTs it takes) is answered as net/http answers it through
// ServeHTTP, on a connection handed to net/http: the same status, body
// and headers (Date aside) for found keys, the compact Accept (routerd
// answers JSON either way), pinned versions, bad bodies, unknown dbs,
// replicas shedding or without the version, and failover.
func TestFastPathBatchesAnswerAsServeHTTP(t *testing.T) {
	s, f := newBatchTestServer(t, 0)
	addr := serveFast(t, s)
	fc := h1fasttest.Dial(t, addr)
	hc := h1fasttest.Dial(t, addr)
	hc.Send("GET /db/ HTTP/1.1\r\nHost: routerd\r\n\r\n") // net/http's from here on (a 400)
	hc.Read("GET")
	type batchCase struct {
		target, body string
		hdr          []string
	}
	seen := map[int]bool{}
	check := func(tc batchCase) {
		t.Helper()
		hdr := append([]string{"Content-Length", strconv.Itoa(len(tc.body))}, tc.hdr...)
		req := h1fasttest.Request("POST", tc.target, "routerd", hdr, tc.body)
		name := "POST " + tc.target + " " + strings.Join(tc.hdr, ":") + " " + strconv.Quote(tc.body[:min(len(tc.body), 20)])
		fc.Send(req)
		got, gotBody := fc.Read("POST")
		hc.Send(req)
		want, wantBody := hc.Read("POST")
		seen[got.StatusCode] = true
		if got.Header.Get(wire.HeaderProxiedTo) != "" && want.Header.Get(wire.HeaderProxiedTo) != "" {
			// Which replica answers is the balancer's choice.
			got.Header.Del(wire.HeaderProxiedTo)
			want.Header.Del(wire.HeaderProxiedTo)
		}
		h1fasttest.SameAnswer(t, name, got, gotBody, want, wantBody)
	}
	cases := []batchCase{
		{"/db", "x\ny\nz\na%2Fb\nx\na/b\n", nil},
		{"/db", "x\ny\n", []string{"Accept", wire.BatchAccept}},
		{"/db", "x\n", []string{wire.HeaderVersion, "v1"}},
		{"/db", "x\n", []string{"x-sequins-version", "v0"}},
		{"/nope", "x\n", nil},
		{"/half", "x\n", nil},
		{"/db", "", nil},
		{"/db", "x\n\ny\n", nil},
		{"/db", "%zz\n", nil},
		{"/db", strings.Repeat("x\n", 101), nil},
	}
	for _, tc := range cases {
		check(tc)
	}
	f.status["a:1"], f.status["b:1"] = 503, 503 // every replica sheds
	check(cases[0])
	f.status["a:1"], f.status["b:1"] = 410, 410 // no replica holds the version
	check(cases[2])
	check(cases[0])
	f.status["a:1"], f.status["b:1"] = 502, 0 // failover
	check(cases[0])
	for _, code := range []int{200, 400, 404, 410, 413, 503} {
		if !seen[code] {
			t.Errorf("no answer %d among the batches (%v): the cases no longer cover it", code, seen)
		}
	}
}
