package proxy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"spangle/routerd/health"
	"spangle/shared/placement"
	"spangle/shared/wire"
)

// Defaults of Options, as in sequins.
const (
	DefaultTimeout      = 100 * time.Millisecond
	DefaultStageTimeout = DefaultTimeout / placement.DefaultReplication
)

// Errors of Do; the server maps each to its status with errors.Is.
var (
	// ErrNoReplica: the partition has no replica known (502).
	ErrNoReplica = errors.New("proxy: no replica known for the partition")
	// ErrUnreachable: every replica failed (502).
	ErrUnreachable = errors.New("proxy: no replica reachable")
	// ErrTimeout: no replica answered within the proxy timeout (504).
	ErrTimeout = errors.New("proxy: all tried replicas timed out")
	// ErrShed: every replica that answered shed the request (503).
	ErrShed = errors.New("proxy: every replica is shedding load")
	// ErrGone: every replica said it does not hold the version
	// (wire.StatusVersionGone) or the key's partition of it
	// (wire.StatusNotHeld).
	ErrGone = errors.New("proxy: no replica holds the version")
	// ErrNoDB: every replica said it does not know the db at all (a
	// wire.StatusVersionGone without X-Sequins-Version): it was removed.
	ErrNoDB = errors.New("proxy: no replica knows the db")
)

// ShedError wraps ErrShed with the Retry-After the replicas asked for.
type ShedError struct {
	RetryAfter string
}

func (e *ShedError) Error() string { return ErrShed.Error() }

// Unwrap makes errors.Is(err, ErrShed) hold.
func (e *ShedError) Unwrap() error { return ErrShed }

// Request is one lookup to send to a partition's replicas.
type Request struct {
	DB      string
	Version string // always pinned upstream
	Key     []byte
	// Keys, when not nil, make the request a batch lookup of these keys
	// (POST /<db>) instead of one of Key; a 200 answer's Body is then
	// a batch answer, in the form its ContentType names.
	Keys [][]byte
	// Replicas are the addresses serving the key's partition, each one
	// registered as a node in the map.
	Replicas []string
	// Timeout, when positive, bounds this lookup instead of Options'
	// Timeout, and its stage timeout grows in proportion: a batch's
	// deadline grows with its keys.
	Timeout time.Duration
	// Patience, when longer than the lookup's timeout, lets the lookup
	// wait past it, up to Patience from its start, while a replica it
	// waits on keeps answering other calls: such a node is busy, the
	// lookup queued behind others, not lost. A lookup waiting only on
	// silent replicas ends a quarter of its timeout after it (the
	// quarter lets answers read during a stall of routerd be recorded).
	Patience time.Duration
}

// Response is an upstream answer. Do returns only answers (200 or 404);
// an Upstream returns whatever the node said.
type Response struct {
	Status       int
	Body         []byte
	ContentType  string
	LastModified string
	// Version is the X-Sequins-Version the node answered with.
	Version string
	// RetryAfter is the node's Retry-After on a 503.
	RetryAfter string
	// Addr is the node that answered (X-Sequins-Proxied-To).
	Addr string
}

// Upstream sends one lookup to one node. HTTPUpstream is the real one;
// tests script their own. Get must honour ctx's cancellation.
type Upstream interface {
	Get(ctx context.Context, addr string, req *Request) (*Response, error)
}

// Options configure a Proxy. Zero values are the documented defaults;
// Upstream and Health are required.
type Options struct {
	Upstream Upstream
	Health   *health.Tracker
	// Timeout bounds a whole lookup (default DefaultTimeout).
	Timeout time.Duration
	// StageTimeout is how long one replica gets before another is started
	// in parallel (default Timeout / placement.DefaultReplication).
	StageTimeout time.Duration
	// Budget caps hedges (default NewBudget(DefaultHedgeRatio,
	// DefaultHedgeWindow, DefaultMinHedges)).
	Budget *Budget
	// OnHedge and OnHedgeWon, if set, count hedges started and hedges
	// whose answer was the one returned.
	OnHedge, OnHedgeWon func()
	Logger              *zap.Logger
}

// Proxy sends lookups to replicas. It is safe for concurrent use.
type Proxy struct {
	opts Options
}

// New returns a Proxy.
func New(opts Options) (*Proxy, error) {
	if opts.Upstream == nil || opts.Health == nil {
		return nil, errors.New("proxy: Upstream and Health are required")
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.StageTimeout <= 0 {
		opts.StageTimeout = opts.Timeout / placement.DefaultReplication
	}
	if opts.Budget == nil {
		opts.Budget = NewBudget(DefaultHedgeRatio, DefaultHedgeWindow, DefaultMinHedges)
	}
	if opts.OnHedge == nil {
		opts.OnHedge = func() {}
	}
	if opts.OnHedgeWon == nil {
		opts.OnHedgeWon = func() {}
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	return &Proxy{opts: opts}, nil
}

// Timeout is the bound of one lookup.
func (p *Proxy) Timeout() time.Duration { return p.opts.Timeout }

// times are the timeout and stage timeout of req.
func (p *Proxy) times(req *Request) (timeout, stage time.Duration) {
	if req.Timeout <= 0 || req.Timeout == p.opts.Timeout {
		return p.opts.Timeout, p.opts.StageTimeout
	}
	return req.Timeout, time.Duration(float64(p.opts.StageTimeout) * float64(req.Timeout) / float64(p.opts.Timeout))
}

// errTimedOut is the cause Do cancels its attempts with when it gives up
// on them: they ran out of time (health.TimedOut), unlike attempts
// cancelled because another replica answered.
var errTimedOut = errors.New("proxy: lookup timed out")

type result struct {
	resp  *Response
	err   error
	addr  string
	call  *health.Call
	hedge bool
}

// tally is what the failed attempts of one lookup said.
type tally struct {
	shed, failed int
	// gone counts the replicas that do not hold the version or the
	// partition, noDB those of them that do not know the db either.
	gone, noDB int
	retryAfter string
}

// Do looks req up and returns the first answer (200 or 404) of a
// replica, or an error wrapping one of the package's sentinels, or ctx's
// error when the caller went away.
//
// The first attempt runs on the caller's goroutine: most lookups end
// with it, and then no goroutine was started nor woken to hand its answer
// over (on a machine short of CPU, each hand-over waits for a time
// slice). If it is still running when its stage ends, the rest of the
// lookup (hedges, failover, the deadline) goes on in a goroutine of its
// own, exactly as it would have here, and cancels the first attempt when
// it is decided. The first attempt's connection is woken then through
// its context, an inlineCtx (inline.go), without context.AfterFunc.
func (p *Proxy) Do(ctx context.Context, req *Request) (*Response, error) {
	if len(req.Replicas) == 0 {
		return nil, ErrNoReplica
	}
	p.opts.Budget.Request()
	l := &lookup{p: p, req: req, begin: time.Now()}
	l.timeout, l.stage = p.times(req)
	// Cancelling ctx cancels every attempt still running; each sends to
	// results, which has room for all of them, so none blocks. The cause
	// tells an attempt why it was cancelled.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	l.ctx, l.cancel = ctx, cancel
	l.inline.Context = ctx
	l.cands = l.candBuf[:0]
	for _, a := range req.Replicas {
		l.cands = append(l.cands, p.opts.Health.Node(a))
	}
	l.results = make(chan result, len(l.cands))
	l.pending = l.pendBuf[:0]
	n, call := l.take()
	l.escalated.Add(1)
	escalate := time.AfterFunc(l.stage, func() {
		defer l.escalated.Done()
		l.resp, l.err = l.run()
		l.cancel(nil) // the first attempt, if it still runs, lost
		l.inline.interrupt()
	})
	p.attempt(&l.inline, n, call, req, false, l.timeout, l.stage, l.results)
	if escalate.Stop() {
		// Over within its stage: its result waits in results. An
		// answer is returned as it is, without run's timer and select.
		r := <-l.results
		if r.err == nil && (r.resp.Status == http.StatusOK || r.resp.Status == http.StatusNotFound) {
			l.pending = l.pending[:0]
			r.resp.Addr = r.addr
			return r.resp, nil
		}
		l.results <- r
		return l.run()
	}
	l.escalated.Wait()
	return l.resp, l.err
}

// lookup is the state of one Do once its first attempt started; run
// owns it.
type lookup struct {
	p              *Proxy
	req            *Request
	ctx            context.Context
	cancel         context.CancelCauseFunc
	begin          time.Time
	timeout, stage time.Duration
	results        chan result
	inline         inlineCtx      // the first attempt's context
	cands          []*health.Node // not yet tried
	pending        []*health.Call // attempts not yet reported
	candBuf        [8]*health.Node
	pendBuf        [8]*health.Call
	// escalated ends when the goroutine that took the lookup over past
	// its first stage has set resp and err.
	escalated sync.WaitGroup
	resp      *Response
	err       error
}

// take begins a call to the next candidate and counts it pending; nil
// when none is left.
func (l *lookup) take() (*health.Node, *health.Call) {
	var n *health.Node
	var call *health.Call
	n, call, l.cands = take(l.cands)
	if n != nil {
		l.pending = append(l.pending, call)
	}
	return n, call
}

// launch starts an attempt at the next candidate in a goroutine.
func (l *lookup) launch(hedge bool) bool {
	n, call := l.take()
	if n == nil {
		return false
	}
	go l.p.attempt(l.ctx, n, call, l.req, hedge, l.timeout, l.stage, l.results)
	return true
}

// run waits for the attempts, starting hedges and failing over, until an
// answer, the end of every attempt, or the deadline.
func (l *lookup) run() (*Response, error) {
	p, ctx, req := l.p, l.ctx, l.req
	begin, timeout, stageTimeout := l.begin, l.timeout, l.stage
	// One timer serves the stage (the next hedge) and the deadline: it
	// fires at the earlier; a zero stageAt has no hedge left to start.
	stageAt, deadlineAt := begin.Add(stageTimeout), begin.Add(timeout)
	tm := time.NewTimer(time.Until(stageAt))
	defer tm.Stop()
	arm := func() {
		next := deadlineAt
		if !stageAt.IsZero() && stageAt.Before(next) {
			next = stageAt
		}
		tm.Reset(time.Until(next))
	}
	settling := false // the deadline passed once without an answer seen
	var t tally
	for {
		select {
		case r := <-l.results:
			l.pending = slices.DeleteFunc(l.pending, func(c *health.Call) bool { return c == r.call })
			if r.err == nil && (r.resp.Status == http.StatusOK || r.resp.Status == http.StatusNotFound) {
				if r.hedge {
					p.opts.OnHedgeWon()
				}
				r.resp.Addr = r.addr
				return r.resp, nil
			}
			if ctx.Err() != nil {
				// The caller went away (run cancels ctx only as it
				// returns): that, not the attempt's failure, is the
				// outcome.
				return nil, abandoned(ctx)
			}
			t.add(r)
			// A failure or a shed is a cue to try the next replica now;
			// that is failover, bounded by the replicas, not a hedge.
			if l.launch(false) {
				stageAt = time.Now().Add(stageTimeout)
				arm()
			} else if len(l.pending) == 0 {
				return nil, t.err()
			}
		case <-tm.C:
			now := time.Now()
			if !now.Before(deadlineAt) {
				left := req.Patience - now.Sub(begin)
				switch {
				case left > 0 && answering(l.pending, timeout+timeout/settle):
					deadlineAt = now.Add(min(timeout, left))
					settling = false
				case left > 0 && !settling:
					// No answer seen; but when routerd itself was starved
					// (a stall of the machine), answers may be read but
					// not yet recorded. A short while lets them be.
					deadlineAt = now.Add(min(timeout/settle, left))
					settling = true
				default:
					l.cancel(errTimedOut)
					l.inline.interrupt()
					return nil, ErrTimeout
				}
			}
			if !stageAt.IsZero() && !now.Before(stageAt) {
				stageAt = time.Time{}
				if len(l.cands) > 0 {
					if p.opts.Budget.AllowHedge() && l.launch(true) {
						p.opts.OnHedge()
					}
					stageAt = now.Add(stageTimeout)
				}
			}
			arm()
		case <-ctx.Done():
			return nil, abandoned(ctx)
		}
	}
}

// abandoned is Do's error when the caller's ctx ended.
func abandoned(ctx context.Context) error {
	if err := context.Cause(ctx); !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("proxy: lookup abandoned: %w", err)
	}
	return ErrTimeout
}

// settle: a patient lookup that saw no answer at its deadline looks
// again after timeout/settle before it gives up.
const settle = 4

// answering reports whether a node of the pending attempts answered a
// call within the last window since its attempt began: it is alive and
// the attempt queued on it.
func answering(pending []*health.Call, window time.Duration) bool {
	now := time.Now()
	for _, c := range pending {
		since := c.Began()
		if w := now.Add(-window); w.After(since) {
			since = w
		}
		if c.Node().AnsweredSince(since) {
			return true
		}
	}
	return false
}

func (t *tally) add(r result) {
	switch {
	case r.err != nil:
		t.failed++
	case r.resp.Status == wire.StatusUnavailable:
		t.shed++
		if r.resp.RetryAfter > t.retryAfter {
			t.retryAfter = r.resp.RetryAfter
		}
	case r.resp.Status == wire.StatusVersionGone:
		t.gone++
		if r.resp.Version == "" {
			t.noDB++
		}
	case r.resp.Status == wire.StatusNotHeld:
		t.gone++
	default:
		t.failed++
	}
}

func (t *tally) err() error {
	switch {
	case t.shed > 0:
		ra := t.retryAfter
		if ra == "" {
			ra = "1"
		}
		return &ShedError{RetryAfter: ra}
	case t.gone > 0 && t.failed == 0 && t.noDB == t.gone:
		return ErrNoDB
	case t.gone > 0 && t.failed == 0:
		return ErrGone
	default:
		return ErrUnreachable
	}
}

// take removes one node from cands and begins a call to it: by
// health.Pick among those whose breaker lets it through, or, when every
// breaker refuses, forcibly to one of them.
func take(cands []*health.Node) (*health.Node, *health.Call, []*health.Node) {
	if len(cands) == 0 {
		return nil, nil, cands
	}
	now := time.Now()
	rest := cands
	var refused int // cands[:refused] were refused by their breakers
	for refused < len(cands) {
		n := health.Pick(rest, now)
		i := index(cands, n)
		cands[refused], cands[i] = cands[i], cands[refused]
		refused++
		rest = cands[refused:]
		if call, ok := n.Begin(false); ok {
			return n, call, remove(cands, refused-1)
		}
	}
	n := cands[0]
	call, _ := n.Begin(true)
	return n, call, remove(cands, 0)
}

func index(s []*health.Node, n *health.Node) int {
	for i, x := range s {
		if x == n {
			return i
		}
	}
	panic("proxy: picked node not among candidates")
}

func remove(s []*health.Node, i int) []*health.Node {
	return append(s[:i], s[i+1:]...)
}

// attempt asks one node and reports to results and to the node's health.
// timeout and stage are the lookup's.
func (p *Proxy) attempt(ctx context.Context, n *health.Node, call *health.Call, req *Request, hedge bool, timeout, stage time.Duration, results chan<- result) {
	resp, err := p.opts.Upstream.Get(ctx, n.Addr(), req)
	outcome := health.Success
	switch {
	case err != nil:
		outcome = health.Failure
		if ctx.Err() == nil {
			break
		}
		cause := context.Cause(ctx)
		ranOut := errors.Is(cause, errTimedOut) || errors.Is(cause, context.DeadlineExceeded)
		elapsed := time.Since(call.Began())
		switch {
		case ranOut && elapsed < stage:
			// A hedge started late in a lookup that then ran out of
			// time had less than a stage to answer: that says nothing
			// about the node, and counting it would open the breakers
			// of healthy replicas of a starved lookup.
			outcome = health.Ignored
		case ranOut || elapsed >= timeout:
			// It had the lookup's whole time (the lookup may have
			// waited longer on another replica that kept answering):
			// a failure only if the node answered nothing meanwhile.
			outcome = health.TimedOut
		default:
			// Another replica answered first, or the client left.
			outcome = health.Ignored
		}
	case resp.Status == wire.StatusUnavailable:
		outcome = health.Shed
	case resp.Status == wire.StatusNotHeld:
		// A stale registration: the node is up, but says nothing about
		// how it serves what it holds. Do asks the next replica.
		outcome = health.Ignored
	case resp.Status >= 500:
		outcome = health.Failure
	case resp.Status == http.StatusNotFound && resp.Version == "" && req.Version != "":
		// A pinned lookup answered "no such db", not "no such key": the
		// node does not hold the db now (reloading, starting). That is
		// not the key's absence; it counts as a node without the db,
		// and Do asks the next replica.
		resp = &Response{Status: wire.StatusVersionGone}
		outcome = health.Ignored
	case resp.Status == http.StatusOK || resp.Status == http.StatusNotFound:
		if resp.Version != "" && resp.Version != req.Version {
			// Never pass on another version than the one pinned.
			err = fmt.Errorf("proxy: %s answered version %q for pinned %q", n.Addr(), resp.Version, req.Version)
			resp = nil
			outcome = health.Failure
		}
	}
	call.End(outcome)
	if err != nil && outcome == health.Failure && ctx.Err() == nil {
		p.opts.Logger.Debug("proxy: replica failed", zap.String("node", n.Addr()), zap.Error(err))
	}
	results <- result{resp: resp, err: err, addr: n.Addr(), call: call, hedge: hedge}
}
