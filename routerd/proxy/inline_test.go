package proxy

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"spangle/routerd/health"
)

// The first attempt runs on Do's goroutine and waits on its connection
// without context.AfterFunc (inline.go): when the lookup gives up on it
// (another replica answered, the deadline passed, the caller left), the
// connection is still woken, so Do returns then and not when the slow
// node answers, and the connection is drained and kept.
func TestInlineAttemptInterrupted(t *testing.T) {
	const slowFor = 600 * time.Millisecond
	var slowStarted atomic.Int64
	slowAddr, slowConns := countingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/db/warm" {
			slowStarted.Add(1)
			time.Sleep(slowFor)
		}
		w.Header().Set("X-Sequins-Version", "v1")
		w.Write([]byte("slow"))
	}), nil)
	fastAddr, _ := countingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Sequins-Version", "v1")
		w.Write([]byte("fast"))
	}), nil)
	u := NewHTTPUpstream(HTTPOptions{})
	defer u.Close()
	newP := func() *Proxy {
		p, err := New(Options{Upstream: u, Health: health.New(health.Options{}),
			Timeout: 150 * time.Millisecond, StageTimeout: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	// One connection to the slow node, made first.
	if _, err := u.Get(context.Background(), slowAddr, &Request{DB: "db", Version: "v1", Key: []byte("warm")}); err != nil {
		t.Fatal(err)
	}
	waitIdle := func() {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for u.pipes.idleCount(slowAddr) == 0 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if u.pipes.idleCount(slowAddr) == 0 {
			t.Fatal("the interrupted attempt's connection was not kept")
		}
	}
	cases := []struct {
		name     string
		replicas []string
		cancelAt time.Duration // the caller leaves then; 0: stays
		wantErr  error
	}{
		{"hedge wins", []string{slowAddr, fastAddr}, 0, nil},
		{"deadline", []string{slowAddr}, 0, ErrTimeout},
		{"caller leaves", []string{slowAddr}, 5 * time.Millisecond, context.Canceled},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := &Request{DB: "db", Version: "v1", Key: []byte("k"), Replicas: c.replicas}
			// The slow node must be the first attempt: health.Pick
			// prefers the node with fewer outstanding calls, then the
			// lower latency, which both nodes start without; a fresh
			// Proxy is asked again until it picks the slow node.
			var (
				resp *Response
				err  error
				took time.Duration
			)
			for try := 0; ; try++ {
				if try == 20 {
					t.Fatal("20 fresh Proxies tried the fast node first")
				}
				p := newP()
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if c.cancelAt > 0 {
					time.AfterFunc(c.cancelAt, cancel)
				}
				before := slowStarted.Load()
				start := time.Now()
				resp, err = p.Do(ctx, req)
				took = time.Since(start)
				if slowStarted.Load() != before {
					break
				}
			}
			if took >= slowFor {
				t.Fatalf("Do took %v: it waited for the slow node's answer", took)
			}
			switch {
			case c.wantErr == nil && (err != nil || string(resp.Body) != "fast"):
				t.Fatalf("Do: %v %+v, want the fast node's answer", err, resp)
			case c.wantErr != nil && !errors.Is(err, c.wantErr):
				t.Fatalf("Do: %v, want %v", err, c.wantErr)
			}
			waitIdle()
		})
	}
	if n := slowConns.Load(); n != 1 {
		t.Fatalf("%d connections to the slow node, want the one kept throughout", n)
	}
}
