package health

import (
	"errors"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sony/gobreaker/v2"
	"go.uber.org/zap"
)

// Defaults of Options.
const (
	DefaultFailureThreshold = 5
	DefaultOpenTimeout      = 2 * time.Second
	DefaultStaleAfter       = time.Second
	DefaultFailurePenalty   = 100 * time.Millisecond
	// ewmaWeight is the weight of a new latency sample (1/ewmaWeight).
	ewmaWeight = 8
)

// Outcome is how a call to a node ended, as the breaker should count it.
type Outcome int

const (
	// Success: the node answered (including 404 and 410, which are
	// answers of a healthy node).
	Success Outcome = iota
	// Failure: transport error, timeout or 5xx other than 503.
	Failure
	// Ignored: the call was cancelled because another replica answered
	// first, or the node said it does not hold the partition (421, a
	// stale registration): neither says how the node serves, so the
	// breaker counts it neither way.
	Ignored
	// Shed: the node shed load (503). Its breaker does not count it, since
	// a busy node is not a broken one, but it counts as slow (the failure
	// penalty) so that Pick prefers a node with room for a while.
	Shed
	// TimedOut: the call ran out of time. It is a Failure when the node
	// answered no call at all since this one began (it is down, frozen
	// or cut off), and a Shed otherwise: a node that keeps answering
	// other calls is busy, and a call queued behind them says nothing
	// about whether it works (#31: concurrent batches opened the
	// breakers of live nodes). Calls that were waiting together when
	// a timeout was counted are one silence, not many: only the first
	// counts, so a stall of the machine as long as one timeout costs a
	// node at most a failure or two, while a node silent for several
	// timeouts in a row still trips.
	TimedOut
)

// Options configure a Tracker. Zero values are the documented defaults.
type Options struct {
	// FailureThreshold is how many consecutive failures open a node's
	// breaker (default DefaultFailureThreshold).
	FailureThreshold uint32
	// OpenTimeout is how long a breaker stays open before one probe
	// request may pass (default DefaultOpenTimeout).
	OpenTimeout time.Duration
	// StaleAfter is how old a node's latency may be before it no longer
	// counts against it, so a node that was slow is tried again
	// (default DefaultStaleAfter).
	StaleAfter time.Duration
	// FailurePenalty is the least latency a failed call counts as
	// (default DefaultFailurePenalty): a node that fails fast must not
	// look fast to Pick.
	FailurePenalty time.Duration
	// OnTransition, if set, is called on every breaker state change.
	OnTransition func(addr string, from, to gobreaker.State)
	// Logger defaults to a no-op logger.
	Logger *zap.Logger
}

// Tracker holds one Node per storaged address. It is safe for concurrent
// use.
type Tracker struct {
	opts Options

	mu    sync.RWMutex
	nodes map[string]*Node // guarded by mu
}

// New returns an empty Tracker.
func New(opts Options) *Tracker {
	if opts.FailureThreshold == 0 {
		opts.FailureThreshold = DefaultFailureThreshold
	}
	if opts.OpenTimeout <= 0 {
		opts.OpenTimeout = DefaultOpenTimeout
	}
	if opts.StaleAfter <= 0 {
		opts.StaleAfter = DefaultStaleAfter
	}
	if opts.FailurePenalty <= 0 {
		opts.FailurePenalty = DefaultFailurePenalty
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	return &Tracker{opts: opts, nodes: map[string]*Node{}}
}

// Node returns the node of addr, creating it on first use.
func (t *Tracker) Node(addr string) *Node {
	t.mu.RLock()
	n := t.nodes[addr]
	t.mu.RUnlock()
	if n != nil {
		return n
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if n = t.nodes[addr]; n == nil {
		n = t.newNodeLocked(addr)
		t.nodes[addr] = n
	}
	return n
}

func (t *Tracker) newNodeLocked(addr string) *Node {
	n := &Node{addr: addr, staleAfter: t.opts.StaleAfter, penalty: t.opts.FailurePenalty}
	threshold := t.opts.FailureThreshold
	log := t.opts.Logger
	n.breaker = gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
		Name:        addr,
		MaxRequests: 1,
		Timeout:     t.opts.OpenTimeout,
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= threshold },
		IsExcluded:  func(err error) bool { return errors.Is(err, errIgnored) },
		OnStateChange: func(name string, from, to gobreaker.State) {
			log.Info("health: breaker state change", zap.String("node", name),
				zap.Stringer("from", from), zap.Stringer("to", to))
			if t.opts.OnTransition != nil {
				t.opts.OnTransition(name, from, to)
			}
		},
	})
	return n
}

// Retain forgets the nodes whose address keep does not report, so that a
// node leaving the cluster takes its breaker with it.
func (t *Tracker) Retain(keep func(addr string) bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for addr := range t.nodes {
		if !keep(addr) {
			delete(t.nodes, addr)
		}
	}
}

// NodeStatus is one node as the status page shows it.
type NodeStatus struct {
	Addr        string        `json:"addr"`
	Breaker     string        `json:"breaker"`
	Outstanding int64         `json:"outstanding"`
	Latency     time.Duration `json:"latency_ns"`
	Failures    uint32        `json:"consecutive_failures"`
}

// Status returns every known node, sorted by address.
func (t *Tracker) Status() []NodeStatus {
	t.mu.RLock()
	out := make([]NodeStatus, 0, len(t.nodes))
	for _, n := range t.nodes {
		out = append(out, NodeStatus{
			Addr:        n.addr,
			Breaker:     n.breaker.State().String(),
			Outstanding: n.outstanding.Load(),
			Latency:     time.Duration(n.ewma.Load()),
			Failures:    n.breaker.Counts().ConsecutiveFailures,
		})
	}
	t.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Addr < out[j].Addr })
	return out
}

var errIgnored = errors.New("health: ignored outcome")
var errFailed = errors.New("health: failed call")

// Node is one storaged address. It is safe for concurrent use.
type Node struct {
	addr       string
	staleAfter time.Duration
	penalty    time.Duration
	breaker    *gobreaker.TwoStepCircuitBreaker[struct{}]

	outstanding atomic.Int64
	ewma        atomic.Int64 // latency EWMA in ns
	sampled     atomic.Int64 // unix ns of the last latency sample
	answered    atomic.Int64 // unix ns of the end of the last call the node answered
	silent      atomic.Int64 // unix ns of the last TimedOut counted as a Failure
}

// Addr is the node's host:port.
func (n *Node) Addr() string { return n.addr }

// Available reports whether the node's breaker is not open. A half-open
// breaker counts as available; whether its one probe is already out is
// for Begin to decide.
func (n *Node) Available() bool { return n.breaker.State() != gobreaker.StateOpen }

// Outstanding is the number of calls begun and not yet ended.
func (n *Node) Outstanding() int64 { return n.outstanding.Load() }

// Latency is the node's latency EWMA, or 0 when no recent sample exists.
func (n *Node) Latency(now time.Time) time.Duration {
	if now.UnixNano()-n.sampled.Load() > int64(n.staleAfter) {
		return 0
	}
	return time.Duration(n.ewma.Load())
}

// AnsweredSince reports whether a call to the node ended with an answer
// (Success or Shed) after t: the node is up, whatever it is doing with
// the calls still waiting on it.
func (n *Node) AnsweredSince(t time.Time) bool { return n.answered.Load() > t.UnixNano() }

// Call is one call in flight to a node; End it exactly once.
type Call struct {
	n     *Node
	done  func(error)
	start time.Time
}

// Began is when the call began.
func (c *Call) Began() time.Time { return c.start }

// Node is the node called.
func (c *Call) Node() *Node { return c.n }

// Begin starts a call. Unless force is set, it fails when the breaker
// refuses (open, or half-open with its probe already out); force is for
// when no other replica remains, since trying a doubtful node beats
// failing outright.
func (n *Node) Begin(force bool) (*Call, bool) {
	done, err := n.breaker.Allow()
	if err != nil {
		if !force {
			return nil, false
		}
		done = nil
	}
	n.outstanding.Add(1)
	return &Call{n: n, done: done, start: time.Now()}, true
}

// End records how the call went. A cancelled call (Ignored) still feeds
// its elapsed time to the latency EWMA as a lower bound, so a node that
// keeps losing races looks as slow as it is; a failure counts as at least
// the failure penalty.
func (c *Call) End(o Outcome) {
	n := c.n
	// The call stops counting as outstanding only once its outcome is
	// recorded, so whoever waits for Outstanding to reach 0 sees it.
	defer n.outstanding.Add(-1)
	now := time.Now()
	switch {
	case o == TimedOut && (n.AnsweredSince(c.start) || !n.countSilence(c.start.UnixNano(), now.UnixNano())):
		o = Shed
	case o == TimedOut:
		o = Failure
	case o == Success || o == Shed:
		n.markAnswered(now.UnixNano())
	}
	d := now.Sub(c.start)
	if (o == Failure || o == Shed) && d < n.penalty {
		d = n.penalty
	}
	n.sample(now, d)
	if c.done == nil {
		return
	}
	switch o {
	case Success:
		c.done(nil)
	case Failure:
		c.done(errFailed)
	default:
		c.done(errIgnored)
	}
}

// countSilence reports whether a timed-out call that began at start and
// ended at end is the first to count the node's silence: no timeout was
// counted since the call began. It records end if so.
func (n *Node) countSilence(start, end int64) bool {
	for {
		last := n.silent.Load()
		if last > start {
			return false
		}
		if n.silent.CompareAndSwap(last, end) {
			return true
		}
	}
}

// markAnswered moves answered forward to t, never back.
func (n *Node) markAnswered(t int64) {
	for old := n.answered.Load(); old < t && !n.answered.CompareAndSwap(old, t); old = n.answered.Load() {
	}
}

func (n *Node) sample(now time.Time, d time.Duration) {
	last := n.sampled.Swap(now.UnixNano())
	old := n.ewma.Load()
	if old == 0 || now.UnixNano()-last > int64(n.staleAfter) {
		n.ewma.Store(int64(d))
		return
	}
	// Racy read-modify-write: concurrent samples may lose one, which an
	// average does not mind.
	n.ewma.Store(old + (int64(d)-old)/ewmaWeight)
}

// Pick chooses one of cands by the power of two choices: of two random
// candidates whose breakers are not open, the one with fewer outstanding
// calls, then the lower recent latency. Candidates with open breakers are
// chosen only when nothing else remains. It returns nil for no candidates.
func Pick(cands []*Node, now time.Time) *Node {
	var avail [8]*Node
	ok := avail[:0]
	for _, n := range cands {
		if n.Available() {
			ok = append(ok, n)
		}
	}
	if len(ok) == 0 {
		ok = cands
	}
	switch len(ok) {
	case 0:
		return nil
	case 1:
		return ok[0]
	}
	i := rand.IntN(len(ok))
	j := rand.IntN(len(ok) - 1)
	if j >= i {
		j++
	}
	a, b := ok[i], ok[j]
	if oa, ob := a.Outstanding(), b.Outstanding(); oa != ob {
		if oa < ob {
			return a
		}
		return b
	}
	if b.Latency(now) < a.Latency(now) {
		return b
	}
	return a
}
