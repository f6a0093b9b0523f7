package proxy

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"spangle/routerd/health"
)

// behaviour scripts one replica.
type behaviour func(ctx context.Context, req *Request) (*Response, error)

type script struct {
	mu    sync.Mutex
	nodes map[string]behaviour
	calls []string // guarded by mu
}

func (s *script) Get(ctx context.Context, addr string, req *Request) (*Response, error) {
	s.mu.Lock()
	s.calls = append(s.calls, addr)
	b := s.nodes[addr]
	s.mu.Unlock()
	if b == nil {
		return nil, errors.New("script: unknown node contacted")
	}
	return b(ctx, req)
}

func (s *script) called() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.calls...)
}

func ok(body string) behaviour {
	return func(ctx context.Context, req *Request) (*Response, error) {
		return &Response{Status: 200, Body: []byte(body), Version: req.Version}, nil
	}
}

func status(code int) behaviour {
	return func(ctx context.Context, req *Request) (*Response, error) {
		return &Response{Status: code, RetryAfter: "2", Version: req.Version}, nil
	}
}

// unknownDB is a storaged that does not know the db: 410 without a
// version.
func unknownDB(ctx context.Context, req *Request) (*Response, error) {
	return &Response{Status: 410}, nil
}

// noSuchDB is a storaged that does not know the db and answers as to an
// unpinned lookup: 404 without a version (a node reloading or starting
// as older storaged did). It is not "no such key".
func noSuchDB(ctx context.Context, req *Request) (*Response, error) {
	return &Response{Status: 404}, nil
}

func refused(ctx context.Context, req *Request) (*Response, error) {
	return nil, errors.New("connection refused")
}

func slow(d time.Duration, then behaviour) behaviour {
	return func(ctx context.Context, req *Request) (*Response, error) {
		select {
		case <-time.After(d):
			return then(ctx, req)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

type counters struct{ hedges, won atomic.Int64 }

// The tests' lookup bound is generous (they run on loaded machines under
// -race); "at once" is judged against a stage timeout far longer than
// any stall of the machine.
const (
	testTimeout  = 20 * time.Second
	testStage    = 20 * time.Millisecond
	longStage    = 10 * time.Second
	atOnce       = 5 * time.Second // well under longStage
	shortTimeout = 200 * time.Millisecond
)

func newProxy(t *testing.T, s *script, budget *Budget) (*Proxy, *counters) {
	return newProxyTimes(t, s, budget, testTimeout, testStage)
}

func newProxyTimes(t *testing.T, s *script, budget *Budget, timeout, stage time.Duration) (*Proxy, *counters) {
	t.Helper()
	c := &counters{}
	p, err := New(Options{
		Upstream: s, Health: health.New(health.Options{}),
		Timeout: timeout, StageTimeout: stage,
		Budget:  budget,
		OnHedge: func() { c.hedges.Add(1) }, OnHedgeWon: func() { c.won.Add(1) },
	})
	if err != nil {
		t.Fatal(err)
	}
	return p, c
}

func req(replicas ...string) *Request {
	return &Request{DB: "db", Version: "v1", Key: []byte("k"), Replicas: replicas}
}

func TestDo(t *testing.T) {
	const hour = time.Hour
	cases := []struct {
		name         string
		nodes        map[string]behaviour
		wantStatus   int
		wantErr      error
		wantFrom     string
		timeout      time.Duration // default testTimeout
		stage        time.Duration // default longStage: "at once" means well before it
		maxElapsed   time.Duration
		minElapsed   time.Duration
		hedges, won  int64
		allowHedging bool
	}{
		{name: "one replica answers", nodes: map[string]behaviour{"a": ok("x")},
			wantStatus: 200, wantFrom: "a", maxElapsed: atOnce},
		{name: "404 is an answer", nodes: map[string]behaviour{"a": status(404)},
			wantStatus: 404, wantFrom: "a", maxElapsed: atOnce},
		{name: "slow replica is hedged", nodes: map[string]behaviour{"a": slow(hour, ok("a")), "b": slow(hour, ok("b")), "c": ok("c")},
			wantStatus: 200, wantFrom: "c", allowHedging: true, stage: testStage, maxElapsed: atOnce},
		{name: "refused fails over at once", nodes: map[string]behaviour{"a": refused, "b": refused, "c": ok("c")},
			wantStatus: 200, wantFrom: "c", maxElapsed: atOnce},
		{name: "503 fails over at once", nodes: map[string]behaviour{"a": status(503), "b": ok("b")},
			wantStatus: 200, wantFrom: "b", maxElapsed: atOnce},
		{name: "500 fails over at once", nodes: map[string]behaviour{"a": status(500), "b": ok("b")},
			wantStatus: 200, wantFrom: "b", maxElapsed: atOnce},
		{name: "421 fails over at once", nodes: map[string]behaviour{"a": status(421), "b": ok("b")},
			wantStatus: 200, wantFrom: "b", maxElapsed: atOnce},
		{name: "wrong version is not passed on", nodes: map[string]behaviour{"a": func(ctx context.Context, r *Request) (*Response, error) {
			return &Response{Status: 200, Version: "v0"}, nil
		}, "b": ok("b")},
			wantStatus: 200, wantFrom: "b", maxElapsed: atOnce},
		{name: "all refused is unreachable", nodes: map[string]behaviour{"a": refused, "b": refused},
			wantErr: ErrUnreachable, maxElapsed: atOnce},
		{name: "all shedding is 503", nodes: map[string]behaviour{"a": status(503), "b": status(503)},
			wantErr: ErrShed, maxElapsed: atOnce},
		{name: "all gone is 410", nodes: map[string]behaviour{"a": status(410), "b": status(410)},
			wantErr: ErrGone, maxElapsed: atOnce},
		{name: "all 421 is gone, not unreachable", nodes: map[string]behaviour{"a": status(421), "b": status(421)},
			wantErr: ErrGone, maxElapsed: atOnce},
		{name: "410 and 421 is gone", nodes: map[string]behaviour{"a": status(410), "b": status(421)},
			wantErr: ErrGone, maxElapsed: atOnce},
		{name: "all 410 without a version is no db", nodes: map[string]behaviour{"a": unknownDB, "b": unknownDB},
			wantErr: ErrNoDB, maxElapsed: atOnce},
		{name: "404 without a version is not an answer", nodes: map[string]behaviour{"a": noSuchDB},
			wantErr: ErrNoDB, maxElapsed: atOnce},
		{name: "404 without a version fails over", nodes: map[string]behaviour{"a": noSuchDB, "b": ok("b")},
			wantStatus: 200, wantFrom: "b", maxElapsed: atOnce},
		{name: "a replica that knows the db makes it gone", nodes: map[string]behaviour{"a": unknownDB, "b": status(410)},
			wantErr: ErrGone, maxElapsed: atOnce},
		{name: "all slow is a timeout", nodes: map[string]behaviour{"a": slow(hour, ok("a")), "b": slow(hour, ok("b"))},
			wantErr: ErrTimeout, allowHedging: true, timeout: shortTimeout, stage: testStage,
			minElapsed: shortTimeout, maxElapsed: atOnce},
		{name: "no hedge without budget: the slow answer is waited for", nodes: map[string]behaviour{"a": slow(50*time.Millisecond, ok("a")), "b": slow(50*time.Millisecond, ok("b"))},
			wantStatus: 200, stage: testStage, minElapsed: 50 * time.Millisecond, maxElapsed: atOnce},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &script{nodes: tc.nodes}
			budget := NewBudget(0, 0, 0)
			if tc.allowHedging {
				budget = NewBudget(1, time.Second, 100)
			}
			timeout, stage := tc.timeout, tc.stage
			if timeout == 0 {
				timeout = testTimeout
			}
			if stage == 0 {
				stage = longStage
			}
			p, c := newProxyTimes(t, s, budget, timeout, stage)
			var addrs []string
			for a := range tc.nodes {
				addrs = append(addrs, a)
			}
			start := time.Now()
			resp, err := p.Do(context.Background(), req(addrs...))
			el := time.Since(start)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err %v, want %v", err, tc.wantErr)
				}
			} else {
				if err != nil {
					t.Fatalf("err %v", err)
				}
				if resp.Status != tc.wantStatus || (tc.wantFrom != "" && resp.Addr != tc.wantFrom) {
					t.Fatalf("got %d from %s, want %d from %s", resp.Status, resp.Addr, tc.wantStatus, tc.wantFrom)
				}
			}
			if el > tc.maxElapsed || el < tc.minElapsed {
				t.Fatalf("took %v, want within [%v, %v]", el, tc.minElapsed, tc.maxElapsed)
			}
			if tc.allowHedging && tc.wantFrom == "c" {
				want := int64(1)
				if s.called()[0] == "c" {
					want = 0 // picked the fast one first
				}
				if c.won.Load() != want {
					t.Fatalf("hedges won %d, want %d (calls %v)", c.won.Load(), want, s.called())
				}
			}
			if !tc.allowHedging && c.hedges.Load() != 0 {
				t.Fatalf("%d hedges without budget", c.hedges.Load())
			}
			for _, a := range s.called() {
				if tc.nodes[a] == nil {
					t.Fatalf("contacted %q, not a replica", a)
				}
			}
		})
	}
}

func TestShedKeepsRetryAfter(t *testing.T) {
	s := &script{nodes: map[string]behaviour{"a": status(503)}}
	p, _ := newProxy(t, s, nil)
	_, err := p.Do(context.Background(), req("a"))
	var se *ShedError
	if !errors.As(err, &se) || se.RetryAfter != "2" {
		t.Fatalf("err %v, want ShedError with Retry-After 2", err)
	}
	if _, err := p.Do(context.Background(), req()); !errors.Is(err, ErrNoReplica) {
		t.Fatalf("no replicas: err %v", err)
	}
}

func TestOpenBreakerAvoided(t *testing.T) {
	s := &script{nodes: map[string]behaviour{"bad": refused, "good": ok("g")}}
	p, err := New(Options{Upstream: s, Health: health.New(health.Options{FailureThreshold: 1}), Timeout: testTimeout})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 30; i++ {
		resp, err := p.Do(context.Background(), req("bad", "good"))
		if err != nil || resp.Addr != "good" {
			t.Fatalf("lookup %d: %v %+v", i, err, resp)
		}
	}
	// The first failure opened the breaker: "bad" is asked at most once.
	bad := 0
	for _, a := range s.called() {
		if a == "bad" {
			bad++
		}
	}
	if bad > 1 {
		t.Fatalf("open node contacted %d times: %v", bad, s.called())
	}
	// With only the open node left, it is still tried.
	if _, err := p.Do(context.Background(), req("bad")); !errors.Is(err, ErrUnreachable) {
		t.Fatalf("err %v", err)
	}
	if n := len(s.called()); s.called()[n-1] != "bad" {
		t.Fatal("the only replica, breaker open, was not tried")
	}
}

func TestHedgeBudgetCaps(t *testing.T) {
	s := &script{nodes: map[string]behaviour{"a": slow(30*time.Millisecond, ok("a")), "b": slow(30*time.Millisecond, ok("b"))}}
	p, c := newProxy(t, s, NewBudget(0.1, time.Minute, 2))
	var wg sync.WaitGroup
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := p.Do(context.Background(), req("a", "b")); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if h := c.hedges.Load(); h > 2+4 {
		t.Fatalf("%d hedges for 40 requests, budget 10%% + 2", h)
	}
}

func TestCallerCancel(t *testing.T) {
	s := &script{nodes: map[string]behaviour{"a": slow(time.Second, ok("a"))}}
	p, _ := newProxy(t, s, nil)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(5*time.Millisecond, cancel)
	_, err := p.Do(ctx, req("a"))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if errors.Is(err, ErrTimeout) {
		t.Fatal("a client leaving is not a timeout")
	}
}

func TestBudget(t *testing.T) {
	b := NewBudget(0.5, time.Second, 1)
	if !b.AllowHedge() {
		t.Fatal("the minimum allowance was refused")
	}
	if b.AllowHedge() {
		t.Fatal("hedge beyond the allowance with no requests")
	}
	for i := 0; i < 4; i++ {
		b.Request()
	}
	if !b.AllowHedge() || !b.AllowHedge() || b.AllowHedge() {
		t.Fatal("want exactly 2 more hedges for 4 requests at 50%")
	}
	if NewBudget(0, time.Second, 5).AllowHedge() {
		t.Fatal("ratio 0 must allow no hedges")
	}
}

// TestLateHedgeTimeoutNotAFailure: a lookup runs out of time with a hedge
// that started only just before; the first replica, which had the whole
// lookup, counts a failure, the late hedge does not.
func TestLateHedgeTimeoutNotAFailure(t *testing.T) {
	hang := slow(time.Hour, ok("x"))
	s := &script{nodes: map[string]behaviour{"first": hang, "late": hang}}
	tr := health.New(health.Options{FailureThreshold: 100})
	// The first replica gets the whole lookup (more than a stage), the
	// hedge at most the rest (less than a stage), however late the
	// goroutines run.
	p, err := New(Options{Upstream: s, Health: tr, Timeout: 600 * time.Millisecond, StageTimeout: 400 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Do(context.Background(), req("first", "late")); !errors.Is(err, ErrTimeout) {
		t.Fatalf("err %v, want ErrTimeout", err)
	}
	calls := s.called()
	if len(calls) != 2 {
		t.Fatalf("calls %v, want the first replica and one hedge", calls)
	}
	// The attempts report after Do returns: wait for both to end.
	deadline := time.Now().Add(10 * time.Second)
	for tr.Node("first").Outstanding()+tr.Node("late").Outstanding() > 0 {
		if time.Now().After(deadline) {
			t.Fatal("attempts still outstanding after 10s")
		}
		time.Sleep(time.Millisecond)
	}
	failures := map[string]uint32{}
	for _, st := range tr.Status() {
		failures[st.Addr] = st.Failures
	}
	if failures[calls[0]] != 1 || failures[calls[1]] != 0 {
		t.Fatalf("consecutive failures %v: want 1 for %s (had the whole lookup), 0 for the late hedge %s", failures, calls[0], calls[1])
	}
}

// TestNotHeldNeitherHealsNorTrips: a 421 says the node's registration is
// stale, not that it serves well: between two failures it does not reset
// the breaker's count, so the second failure opens it (threshold 2), and
// alone it opens nothing.
func TestNotHeldNeitherHealsNorTrips(t *testing.T) {
	var n atomic.Int64
	answers := []behaviour{refused, status(421), refused}
	s := &script{nodes: map[string]behaviour{"a": func(ctx context.Context, r *Request) (*Response, error) {
		return answers[n.Add(1)-1](ctx, r)
	}}}
	tr := health.New(health.Options{FailureThreshold: 2, OpenTimeout: time.Hour})
	p, err := New(Options{Upstream: s, Health: tr, Timeout: testTimeout})
	if err != nil {
		t.Fatal(err)
	}
	wants := []error{ErrUnreachable, ErrGone, ErrUnreachable}
	for i, want := range wants {
		if _, err := p.Do(context.Background(), req("a")); !errors.Is(err, want) {
			t.Fatalf("lookup %d: err %v, want %v", i, err, want)
		}
		if i == 1 && !tr.Node("a").Available() {
			t.Fatal("a 421 after one failure opened the breaker")
		}
	}
	if tr.Node("a").Available() {
		t.Fatalf("breaker of a still closed after failure, 421, failure with threshold 2: %+v", tr.Status())
	}
}

// TestPatienceWaitsOnBusyNode (#31): a lookup past its timeout keeps
// waiting, within its patience, on a replica that answers other lookups
// meanwhile, and that wait is no failure of the node; on a silent
// replica it ends at its timeout, and that is a failure.
func TestPatienceWaitsOnBusyNode(t *testing.T) {
	// The queued lookup outlasts its timeout four times; the others
	// answer every few ms, so even a stall of the machine leaves answers
	// within a timeout.
	const timeout, patience = 500 * time.Millisecond, 20 * time.Second
	queued := func(ctx context.Context, req *Request) (*Response, error) {
		if string(req.Key) == "queued" {
			return slow(4*timeout, ok("late"))(ctx, req)
		}
		return ok("now")(ctx, req)
	}
	hang := slow(time.Hour, ok("x"))
	s := &script{nodes: map[string]behaviour{"busy": queued, "silent": hang}}
	tr := health.New(health.Options{FailureThreshold: 1, OpenTimeout: time.Hour})
	p, err := New(Options{Upstream: s, Health: tr, Timeout: testTimeout, StageTimeout: longStage})
	if err != nil {
		t.Fatal(err)
	}
	patient := func(key, node string) *Request {
		return &Request{DB: "db", Version: "v1", Key: []byte(key), Replicas: []string{node}, Timeout: timeout, Patience: patience}
	}
	done := make(chan error, 1)
	go func() {
		resp, err := p.Do(context.Background(), patient("queued", "busy"))
		if err == nil && string(resp.Body) != "late" {
			err = errors.New("answer " + string(resp.Body))
		}
		done <- err
	}()
	for busy := true; busy; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("queued lookup on a node answering others: %v", err)
			}
			busy = false
		case <-time.After(5 * time.Millisecond):
			if _, err := p.Do(context.Background(), patient("other", "busy")); err != nil {
				t.Fatal(err)
			}
		}
	}
	start := time.Now()
	if _, err := p.Do(context.Background(), patient("k", "silent")); !errors.Is(err, ErrTimeout) {
		t.Fatalf("silent node: err %v, want ErrTimeout", err)
	}
	if d := time.Since(start); d > patience/2 {
		t.Fatalf("waited %v on a silent node: patience is for nodes that answer", d)
	}
	for tr.Node("silent").Outstanding() > 0 {
		time.Sleep(time.Millisecond)
	}
	if !tr.Node("busy").Available() || tr.Node("silent").Available() {
		t.Fatalf("breakers %+v: want busy closed, silent open (threshold 1)", tr.Status())
	}
}
