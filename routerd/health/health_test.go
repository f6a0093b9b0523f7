package health

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sony/gobreaker/v2"
)

func fail(t *testing.T, n *Node, k int) {
	t.Helper()
	for i := 0; i < k; i++ {
		c, ok := n.Begin(false)
		if !ok {
			t.Fatalf("breaker refused call %d", i)
		}
		c.End(Failure)
	}
}

func TestBreakerOpensAndRecovers(t *testing.T) {
	var mu sync.Mutex
	var trans []string
	// The open timeout outlasts any stall of a loaded machine between
	// the checks made while the breaker must still be open.
	tr := New(Options{FailureThreshold: 3, OpenTimeout: 500 * time.Millisecond,
		OnTransition: func(addr string, from, to gobreaker.State) {
			mu.Lock()
			defer mu.Unlock()
			trans = append(trans, addr+":"+from.String()+">"+to.String())
		}})
	n := tr.Node("n1:1")
	if tr.Node("n1:1") != n {
		t.Fatal("Node did not return the same node")
	}
	// Ignored and shed outcomes never open the breaker.
	for i := 0; i < 10; i++ {
		c, _ := n.Begin(false)
		c.End(Ignored)
		c, _ = n.Begin(false)
		c.End(Shed)
	}
	fail(t, n, 2)
	if !n.Available() {
		t.Fatal("open after 2 failures with threshold 3")
	}
	fail(t, n, 1)
	if n.Available() {
		t.Fatal("still closed after 3 failures")
	}
	if _, ok := n.Begin(false); ok {
		t.Fatal("open breaker let a call through")
	}
	c, ok := n.Begin(true)
	if !ok {
		t.Fatal("forced call refused")
	}
	c.End(Success) // a forced call does not feed the breaker
	if n.Available() {
		t.Fatal("forced call closed the breaker")
	}
	opened := time.Now()
	for !n.Available() {
		if time.Since(opened) > 10*time.Second {
			t.Fatal("not half-open long after the open timeout")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if el := time.Since(opened); el < 400*time.Millisecond {
		t.Fatalf("half-open after %v, before the open timeout", el)
	}
	probe, ok := n.Begin(false)
	if !ok {
		t.Fatal("half-open breaker refused its probe")
	}
	if _, ok := n.Begin(false); ok {
		t.Fatal("half-open breaker let a second call through")
	}
	probe.End(Success)
	if st := tr.Status(); len(st) != 1 || st[0].Breaker != "closed" || st[0].Outstanding != 0 {
		t.Fatalf("status %+v", st)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"n1:1:closed>open", "n1:1:open>half-open", "n1:1:half-open>closed"}
	if !slices.Equal(trans, want) {
		t.Fatalf("transitions %v, want %v", trans, want)
	}
}

func TestPick(t *testing.T) {
	tr := New(Options{FailureThreshold: 1, OpenTimeout: time.Hour})
	a, b, c := tr.Node("a"), tr.Node("b"), tr.Node("c")
	now := time.Now()
	if Pick(nil, now) != nil {
		t.Fatal("picked from nothing")
	}
	if Pick([]*Node{a}, now) != a {
		t.Fatal("single candidate not picked")
	}
	// Fewer outstanding wins between two.
	ca, _ := a.Begin(false)
	for i := 0; i < 50; i++ {
		if Pick([]*Node{a, b}, now) != b {
			t.Fatal("picked the busier node")
		}
	}
	ca.End(Success)
	// An open breaker takes a node out while others remain.
	fail(t, c, 1)
	for i := 0; i < 50; i++ {
		if Pick([]*Node{a, b, c}, time.Now()) == c {
			t.Fatal("picked an open node while others remain")
		}
	}
	if Pick([]*Node{c}, now) != c {
		t.Fatal("open node not picked when it is the only one")
	}
}

func TestPickPrefersLowLatencyUntilStale(t *testing.T) {
	tr := New(Options{StaleAfter: 100 * time.Millisecond})
	fast, slow := tr.Node("fast"), tr.Node("slow")
	now := time.Now()
	fast.sample(now, time.Millisecond)
	slow.sample(now, 50*time.Millisecond)
	for i := 0; i < 50; i++ {
		if Pick([]*Node{slow, fast}, now) != fast {
			t.Fatal("picked the slow node while its latency is fresh")
		}
	}
	if got := slow.Latency(now.Add(time.Second)); got != 0 {
		t.Fatalf("stale latency %v, want 0", got)
	}
	fast.sample(now.Add(time.Second), time.Millisecond)
	if Pick([]*Node{slow, fast}, now.Add(time.Second)) != slow {
		t.Fatal("a node with stale latency is not probed again")
	}
}

func TestEWMAAndRetain(t *testing.T) {
	tr := New(Options{})
	n := tr.Node("a")
	now := time.Now()
	n.sample(now, 10*time.Millisecond)
	for i := 0; i < 100; i++ {
		n.sample(now, 2*time.Millisecond)
	}
	if l := n.Latency(now); l < 2*time.Millisecond || l > 3*time.Millisecond {
		t.Fatalf("ewma %v, want about 2ms", l)
	}
	tr.Node("b")
	tr.Retain(func(addr string) bool { return addr == "b" })
	if st := tr.Status(); len(st) != 1 || st[0].Addr != "b" {
		t.Fatalf("after Retain: %+v", st)
	}
}

func TestFailureLooksSlow(t *testing.T) {
	tr := New(Options{FailurePenalty: 80 * time.Millisecond})
	bad, good := tr.Node("bad"), tr.Node("good")
	c, _ := bad.Begin(false)
	c.End(Failure)
	c, _ = good.Begin(false)
	c.End(Success)
	if l := bad.Latency(time.Now()); l < 80*time.Millisecond {
		t.Fatalf("failed node latency %v, want >= the penalty", l)
	}
	for i := 0; i < 20; i++ {
		if Pick([]*Node{bad, good}, time.Now()) != good {
			t.Fatal("picked the node that just failed")
		}
	}
}

// TestTimedOutCountsOnlyOnSilentNodes (#31): a call that ran out of time
// is a failure when its node answered nothing since it began, and not
// when the node answered another call meanwhile (busy, not broken).
// Calls that waited together count one silence.
func TestTimedOutCountsOnlyOnSilentNodes(t *testing.T) {
	tr := New(Options{FailureThreshold: 2, OpenTimeout: time.Hour})
	busy, silent := tr.Node("busy"), tr.Node("silent")
	for _, n := range []*Node{busy, silent} {
		// Calls queued at once, as concurrent batches are.
		var calls []*Call
		for i := 0; i < 5; i++ {
			c, _ := n.Begin(false)
			calls = append(calls, c)
		}
		if n == busy {
			c, _ := n.Begin(false)
			c.End(Success)
		}
		for _, c := range calls {
			c.End(TimedOut)
		}
	}
	if !busy.Available() {
		t.Fatalf("timeouts on a node that answered meanwhile opened its breaker: %+v", tr.Status())
	}
	if !silent.Available() {
		t.Fatalf("5 calls timing out together, threshold 2, opened the breaker: one silence counted 5 times: %+v", tr.Status())
	}
	if !busy.AnsweredSince(time.Now().Add(-time.Minute)) || silent.AnsweredSince(time.Now().Add(-time.Minute)) {
		t.Fatal("AnsweredSince does not tell the busy node from the silent one")
	}
	// A second silence, begun after the first was counted, trips it; so
	// do timeouts after the busy node's last answer.
	for _, n := range []*Node{busy, silent} {
		for i := 0; i < 2; i++ {
			c, ok := n.Begin(false)
			if !ok {
				break // open already: the silent node had counted one
			}
			c.End(TimedOut)
		}
	}
	if busy.Available() || silent.Available() {
		t.Fatalf("two silences in a row, threshold 2, left a breaker closed: %+v", tr.Status())
	}
}
