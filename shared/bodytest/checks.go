package bodytest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// Batcher is a daemon's handler under the checks below: it answers
// batch lookups (POST /<db>) and serves its metrics at /metrics.
type Batcher struct {
	Handler http.Handler
	// DB is a db the handler serves, and Key one of its keys.
	DB, Key string
	// Metrics is the daemon's metric prefix, "spangle_storaged" say.
	Metrics string
}

// CheckReadDeadline: a batch body that stops arriving is answered 408
// when the handler's batch read timeout (a short one: the check waits
// for it) runs out, and the refusal is counted.
func CheckReadDeadline(t *testing.T, b Batcher) {
	t.Helper()
	p, addr := serve(t, b.Handler)
	reading := p.Asking(2)
	slow := dial(t, addr)
	if err := slow.Post("/"+b.DB, 100); err != nil {
		t.Fatal(err)
	}
	if err := slow.Send([]byte(b.Key[:2])); err != nil {
		t.Fatal(err)
	}
	<-reading
	resp, err := slow.Answer(30 * time.Second)
	if err != nil {
		t.Fatalf("no answer to a stalled body: %v", err)
	}
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Fatalf("stalled body: %d, want 408", resp.StatusCode)
	}
	if got := b.metric(t, "_batch_bodies_refused_total", `{reason="timeout"}`); got != 1 {
		t.Fatalf("timeouts counted: %v, want 1", got)
	}
}

// CheckBudget: the bytes of batch bodies held at once are bounded by the
// handler's budget (made with a budget of budget bytes, batches of up to
// 64 KiB and a long read timeout): past it a batch gets 503 with
// Retry-After, and the bytes come back when the stalled body's request
// ends.
func CheckBudget(t *testing.T, b Batcher, budget int64) {
	t.Helper()
	p, addr := serve(t, b.Handler)
	reading := p.Asking(40 << 10)
	stalled := dial(t, addr)
	if err := stalled.Post("/"+b.DB, -1); err != nil {
		t.Fatal(err)
	}
	line := b.Key + "\n"
	if err := stalled.Chunk([]byte(strings.Repeat(line, (40<<10)/len(line)+1))); err != nil {
		t.Fatal(err)
	}
	<-reading
	second := strings.Repeat(line, (40<<10)/len(line))
	rec := b.post(b.DB, second)
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("batch past the budget: %d %q, want 503 with Retry-After", rec.Code, rec.Header().Get("Retry-After"))
	}
	if held := b.metric(t, "_batch_body_bytes", ""); held < 40<<10 || held > float64(budget) {
		t.Fatalf("%v bytes held for a stalled 40 KiB body, want 40 KiB to %d", held, budget)
	}
	if got := b.metric(t, "_batch_bodies_refused_total", `{reason="memory"}`); got != 1 {
		t.Fatalf("refusals for memory counted: %v, want 1", got)
	}
	// The stalled client finishes; its bytes come back.
	if err := stalled.Send([]byte("0\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	if resp, err := stalled.Answer(30 * time.Second); err != nil || resp.StatusCode != 200 {
		t.Fatalf("stalled batch finished: %v %v", resp, err)
	}
	if held := b.metric(t, "_batch_body_bytes", ""); held != 0 {
		t.Fatalf("%v bytes still held after every batch was answered", held)
	}
	if rec := b.post(b.DB, second); rec.Code != 200 {
		t.Fatalf("batch within the budget: %d %s", rec.Code, rec.Body)
	}
}

// CheckBadPathAsGet: a POST to a path with a bad db name is a bad
// request, as a GET of it is; a path that is no db is 405 with Allow.
func CheckBadPathAsGet(t *testing.T, b Batcher) {
	t.Helper()
	for _, tc := range []struct {
		path string
		code int
	}{
		{"/.hidden", 400}, {"/_x", 400}, {"/%2e%2e", 400}, {"/" + b.DB + "/", 400},
		{"/", 405}, {"/" + b.DB + "/key", 405},
	} {
		get := httptest.NewRecorder()
		b.Handler.ServeHTTP(get, httptest.NewRequest("GET", tc.path, nil))
		rec := b.post(tc.path[1:], "k\n")
		if rec.Code != tc.code {
			t.Errorf("POST %s: %d, want %d", tc.path, rec.Code, tc.code)
		}
		if tc.code == 400 && get.Code != 400 {
			t.Errorf("GET %s: %d, want 400", tc.path, get.Code)
		}
		if rec.Code == 405 && rec.Header().Get("Allow") == "" {
			t.Errorf("POST %s: 405 without Allow", tc.path)
		}
	}
}

func (b Batcher) post(db, body string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	b.Handler.ServeHTTP(rec, httptest.NewRequest("POST", "/"+db, strings.NewReader(body)))
	return rec
}

// metric reads the value of the series b.Metrics+name+labels from
// /metrics.
func (b Batcher) metric(t *testing.T, name, labels string) float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	b.Handler.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	series := b.Metrics + name + labels + " "
	for _, l := range strings.Split(rec.Body.String(), "\n") {
		if v, ok := strings.CutPrefix(l, series); ok {
			var f float64
			if err := json.Unmarshal([]byte(v), &f); err != nil {
				t.Fatalf("%s: %v", l, err)
			}
			return f
		}
	}
	t.Fatalf("no metric %s in /metrics", series)
	return 0
}

func serve(t *testing.T, h http.Handler) (*Probe, string) {
	t.Helper()
	p := Wrap(h)
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return p, srv.Listener.Addr().String()
}

func dial(t *testing.T, addr string) *Client {
	t.Helper()
	c, err := Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
