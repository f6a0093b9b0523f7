package h1fast

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"spangle/shared/h1fast/h1fasttest"
	"spangle/shared/wire"
)

// testBatch answers a batch as a daemon's batch endpoint does: the body
// read with wire.ReadBatchRequest (a db "tight" with a budget too small
// for any body), its errors as wire.BatchStatus says, the keys in the
// form Accept asks for, with the request's X-Sequins-Version.
func testBatch(tight *wire.BatchBudget) Post {
	return func(w http.ResponseWriter, r *http.Request, t wire.Target) {
		o := wire.BatchRead{Limits: wire.BatchLimits{MaxKeys: 10, MaxBytes: 64}, Timeout: 300 * time.Millisecond}
		if t.DB == "tight" {
			o.Budget = tight
		}
		keys, release, err := wire.ReadBatchRequest(w, r, o)
		defer release()
		h := w.Header()
		if err != nil {
			if errors.Is(err, wire.ErrBatchBusy) {
				h["Retry-After"] = []string{"1"}
			}
			msg := err.Error() + "\n"
			h["Content-Type"] = []string{"text/plain; charset=utf-8"}
			h["Content-Length"] = []string{strconv.Itoa(len(msg))}
			w.WriteHeader(wire.BatchStatus(err))
			io.WriteString(w, msg)
			return
		}
		h[wire.HeaderVersion] = r.Header[wire.HeaderVersion]
		h["Content-Type"] = []string{wire.ContentTypeJSON}
		if wire.BatchAccepts(r.Header) {
			h["Content-Type"] = []string{wire.ContentTypeBatchBinary}
		}
		var b strings.Builder
		b.WriteString(t.DB + " " + r.Host + ":")
		for _, k := range keys {
			b.WriteString(" " + k.Raw + "=" + k.Key)
		}
		h["Content-Length"] = []string{strconv.Itoa(b.Len())}
		io.WriteString(w, b.String())
	}
}

// startPost serves batches on the fast path (at most 64-byte bodies)
// and, the same way, on net/http; posts counts those of the fast path.
func startPost(t *testing.T) (addr string, posts *atomic.Int64) {
	t.Helper()
	posts = new(atomic.Int64)
	batch := testBatch(wire.NewBatchBudget(1))
	fallback := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tg, err := wire.ParsePath(r.URL.EscapedPath()); err == nil && r.Method == http.MethodPost && !tg.HasKey {
			w.Header()["X-Served-By"] = []string{"net/http"}
			batch(w, r, tg)
			return
		}
		testFallback(w, r)
	})
	ts := start(t, Options{Fallback: fallback, Post: PostOptions{MaxBytes: 64, Handle: func(w http.ResponseWriter, r *http.Request, tg wire.Target) {
		posts.Add(1)
		batch(w, r, tg)
	}}}, nil)
	return ts.addr, posts
}

// A batch POST the fast path takes is answered as net/http answers it
// through the same handler: keys, Accept, versions, bad bodies (400,
// 413), a body over the budget (503, the body dropped, the connection
// kept), Connection: close; pipelined, and mixed with lookups.
func TestPostAnswersAsNetHTTP(t *testing.T) {
	addr, posts := startPost(t)
	fast := h1fasttest.Dial(t, addr)
	slow := h1fasttest.Dial(t, addr)
	slow.Send("GET /db/ HTTP/1.1\r\nHost: x\r\n\r\n") // net/http's from here on
	slow.Read("GET")
	post := func(target, hdr, body string) string {
		return "POST " + target + " HTTP/1.1\r\nHost: x\r\n" + hdr + "Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
	}
	cases := []struct{ req, method string }{
		{post("/db", "", "k1\nk2\n"), "POST"},
		{post("/db", "", "k1\r\na%2Fb\nk1"), "POST"},
		{post("/db", "Accept: "+wire.BatchAccept+"\r\n", "k1\n"), "POST"},
		{post("/db", "accept: text/plain\r\nAccept: "+wire.ContentTypeBatchBinary+"\r\n", "k1\n"), "POST"},
		{post("/db", "X-Sequins-Version: v7\r\nx-sequins-version: v8\r\n", "k1\n"), "POST"},
		{post("/db", "Connection: keep-alive\r\nContent-Type: text/plain\r\n", "k1\n"), "POST"},
		{post("/db", "", ""), "POST"},
		{post("/db", "", "k1\n\nk2\n"), "POST"},
		{post("/db", "", "%zz\n"), "POST"},
		{post("/db", "", "0\n1\n2\n3\n4\n5\n6\n7\n8\n9\na\n"), "POST"},
		{post("/db", "", strings.Repeat("k", 64)), "POST"},
		{post("/tight", "", "k1\nk2\nk3\n"), "POST"},
		{"GET /db/k HTTP/1.1\r\nHost: x\r\n\r\n", "GET"},
		{post("/db", "", "after\n"), "POST"},
		{post("/db", "Connection: close\r\n", "k1\n"), "POST"},
	}
	for i, tc := range cases {
		// The last ends its connections: pipeline it behind the one
		// before.
		before := posts.Load()
		if i == len(cases)-1 {
			fast = h1fasttest.Dial(t, addr)
			slow = h1fasttest.Dial(t, addr)
			slow.Send("GET /db/ HTTP/1.1\r\nHost: x\r\n\r\n")
			slow.Read("GET")
		}
		fast.Send(tc.req)
		got, gotBody := fast.Read(tc.method)
		if tc.method == "POST" && (posts.Load() != before+1 || got.Header.Get("X-Served-By") != "") {
			t.Fatalf("%q was not served on the fast path", tc.req)
		}
		slow.Send(tc.req)
		want, wantBody := slow.Read(tc.method)
		if want.Header.Get("X-Served-By") == "" {
			t.Fatalf("%q was not served by net/http", tc.req)
		}
		want.Header.Del("X-Served-By")
		name := strings.ReplaceAll(tc.req, "\r\n", " ")
		h1fasttest.SameAnswer(t, name, got, gotBody, want, wantBody)
	}
	for _, c := range []*h1fasttest.RawConn{fast, slow} {
		if n, err := c.Reader().ReadByte(); err != io.EOF {
			t.Errorf("after Connection: close: read %v, %v; want EOF", n, err)
		}
	}
}

// A body that does not arrive in time is 408 with Connection: close on
// both paths; a body left unread (over the budget) does not spill into
// the next request.
func TestPostBodyLateOrUnread(t *testing.T) {
	addr, posts := startPost(t)
	answers := func(c *h1fasttest.RawConn) (*http.Response, string) {
		c.Send("POST /db HTTP/1.1\r\nHost: x\r\nContent-Length: 20\r\n\r\nk1\nk2\n")
		return c.Read("POST")
	}
	fast := h1fasttest.Dial(t, addr)
	slow := h1fasttest.Dial(t, addr)
	slow.Send("GET /db/ HTTP/1.1\r\nHost: x\r\n\r\n")
	slow.Read("GET")
	got, gotBody := answers(fast)
	want, wantBody := answers(slow)
	if posts.Load() != 1 || want.Header.Get("X-Served-By") == "" {
		t.Fatalf("late body: fast path took %d, net/http %v", posts.Load(), want.Header)
	}
	want.Header.Del("X-Served-By")
	if got.StatusCode != http.StatusRequestTimeout || got.StatusCode != want.StatusCode || gotBody != wantBody || !got.Close || !want.Close {
		t.Errorf("late body: fast %d %q close=%v; net/http %d %q close=%v", got.StatusCode, gotBody, got.Close, want.StatusCode, wantBody, want.Close)
	}
	h1fasttest.SameHeaders(t, "late body", got.Header, want.Header)

	rc := h1fasttest.Dial(t, addr)
	smuggled := "GET /db/smuggled HTTP/1.1\r\nHost: x\r\n\r\n"
	rc.Send("POST /tight HTTP/1.1\r\nHost: x\r\nContent-Length: " + strconv.Itoa(len(smuggled)) + "\r\n\r\n" + smuggled)
	rc.Send("GET /db/next HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp, _ := rc.Read("POST"); resp.StatusCode != http.StatusServiceUnavailable || resp.Close {
		t.Fatalf("over the budget: %d close=%v", resp.StatusCode, resp.Close)
	}
	if resp, body := rc.Read("GET"); body != "v:next" {
		t.Fatalf("after a body left unread: %d %q, want v:next", resp.StatusCode, body)
	}
}

// POSTs the fast path leaves to net/http: without Content-Length,
// chunked, with Expect, over MaxBytes, two lengths, a key's path, "/",
// HTTP/1.0.
func TestPostLeftToNetHTTP(t *testing.T) {
	addr, posts := startPost(t)
	for _, req := range []string{
		"POST /db HTTP/1.1\r\nHost: x\r\n\r\n",
		"POST /db HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nk1\n\r\n0\r\n\r\n",
		"POST /db HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\nk1\n",
		"POST /db HTTP/1.1\r\nHost: x\r\nContent-Length: 65\r\n\r\n" + strings.Repeat("k", 65),
		"POST /db HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nk1\n",
		"POST /db/k HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nk1\n",
		"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nk1\n",
		"POST /db HTTP/1.0\r\nHost: x\r\nContent-Length: 3\r\n\r\nk1\n",
		"POST /db?x=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nk1\n",
	} {
		rc := h1fasttest.Dial(t, addr)
		rc.Send(req)
		resp, body := rc.Read("POST")
		if resp.StatusCode == http.StatusContinue {
			resp, body = rc.Read("POST")
		}
		if posts.Load() != 0 || resp.Header.Get("X-Served-By") == "" && !strings.HasPrefix(body, "fallback") {
			t.Errorf("%q: fast path took it (%d %q)", req, resp.StatusCode, body)
		}
		rc.Close()
	}
}

// The fast path bounds what it takes before reading a byte of the body.
func TestContentLength(t *testing.T) {
	for _, tc := range []struct {
		v  string
		n  int64
		ok bool
	}{
		{"0", 0, true}, {"64", 64, true}, {"007", 7, true}, {"65", 0, false}, {"", 0, false},
		{"+1", 0, false}, {"-1", 0, false}, {"1 2", 0, false}, {"99999999999999999999", 0, false},
		{"9223372036854775807", 0, false}, {"922337203685477580", 0, false},
	} {
		if n, ok := contentLength([]byte(tc.v), 64); n != tc.n || ok != tc.ok {
			t.Errorf("contentLength(%q) = %d, %v; want %d, %v", tc.v, n, ok, tc.n, tc.ok)
		}
	}
}
