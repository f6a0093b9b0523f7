package proxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"spangle/shared/wire"
)

// A single GET is pipelined: the lookups for one node share a few
// kept-alive connections, each request is queued on one of them, and
// whichever lookup finds no write under way writes the queue: every
// request queued meanwhile goes in the same write. Each connection has a
// reader goroutine that reads the answers in order, as many as one read
// brings, and hands each to its lookup. storaged's loop (shared/h1fast)
// answers the requests it finds already read with one write. Per lookup,
// that is a fraction of a write and of two reads on each side, where a
// connection of its own cost each lookup a write and two reads on both.
//
// A lookup that gives up (another replica answered, its deadline, its
// caller left) stops waiting and leaves its answer to the reader, which
// drops it; the connection serves on. A connection whose answers stop
// coming while a request queued on it was given up is closed after
// drainGrace, and is given no new request meanwhile. A connection that
// fails, or whose answer says Connection: close, fails the requests
// queued on it that were not answered; those not yet answered at all are
// sent once more on another connection, as net/http does for an
// idempotent request, when their connection had served before.

// pipeDepth is how many requests a connection carries before the next
// one is preferred, and another dialled when every one carries as many.
// More per connection coalesces more; more connections let storaged look
// up on more cores and keep a slow lookup from holding up many others.
const pipeDepth = 8

// errPipesClosed: the upstream was closed; the lookup goes on a
// connection of its own (getConns), not kept.
var errPipesClosed = errors.New("proxy: pipelined connections closed")

// pipes keeps the pipelined connections per node. It is safe for
// concurrent use.
type pipes struct {
	dial     func(ctx context.Context, network, addr string) (net.Conn, error)
	maxConns int
	idleFor  time.Duration
	maxValue int64
	depth    int32 // pipeDepth; tests lower it

	mu     sync.Mutex
	nodes  map[string]*pipeNode // guarded by mu
	closed bool                 // guarded by mu
}

// pipeNode is one node's connections.
type pipeNode struct {
	conns   []*pipeConn // in the order they were made
	dialing *pipeDial   // the dial under way, or nil
}

// pipeDial is one dial; done closes when it ended, err set before.
type pipeDial struct {
	done chan struct{}
	err  error
}

func newPipes(dial func(ctx context.Context, network, addr string) (net.Conn, error), maxConns int, idleFor time.Duration, maxValue int64) *pipes {
	return &pipes{dial: dial, maxConns: maxConns, idleFor: idleFor, maxValue: maxValue, depth: pipeDepth,
		nodes: map[string]*pipeNode{}}
}

// get sends GET <path> pinned to version to addr on a pipelined
// connection and waits for its answer or for ctx.
func (p *pipes) get(ctx context.Context, addr, path, version string) (*Response, error) {
	for attempt := 0; ; attempt++ {
		c, err := p.pick(ctx, addr)
		if err != nil {
			return nil, err
		}
		resp, started, err := c.do(ctx, path, version)
		if err == nil {
			return resp, nil
		}
		if !started && c.served.Load() && attempt == 0 && ctx.Err() == nil {
			// The node closed a connection that had served: it most
			// likely restarted and closed the others too; the ones
			// idle since before it broke are not tried before a new
			// connection (one dialled since, by another request that
			// found this one broken, is kept).
			p.dropIdle(addr, c.brokeAt())
			continue
		}
		if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
			return nil, fmt.Errorf("%w (%w)", cerr, err)
		}
		return nil, err
	}
}

// pick returns the connection to queue a request for addr on: the first
// carrying fewer than depth requests (so that lookups at the same moment
// share a write), else the least loaded while another is dialled; with
// none yet, the one a dial makes.
func (p *pipes) pick(ctx context.Context, addr string) (*pipeConn, error) {
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, errPipesClosed
		}
		n := p.nodes[addr]
		if n == nil {
			n = &pipeNode{}
			p.nodes[addr] = n
		}
		var best *pipeConn
		var bestN int32
		var now time.Time
		for i := 0; i < len(n.conns); i++ {
			x := n.conns[i]
			k := x.pending.Load()
			if k == 0 && x.idleSince(&now, p.idleFor) {
				// Idle too long: the node may have dropped it.
				n.conns = append(n.conns[:i:i], n.conns[i+1:]...)
				i--
				go x.fail(errIdleTooLong)
				continue
			}
			if x.stalled.Load() {
				k += p.depth // a request given up waits on it: last resort
			}
			if best == nil || k < bestN {
				best, bestN = x, k
			}
			if k < p.depth {
				break
			}
		}
		if (best == nil || bestN >= p.depth) && n.dialing == nil && len(n.conns) < p.maxConns {
			d := &pipeDial{done: make(chan struct{})}
			n.dialing = d
			go p.dialFor(context.WithoutCancel(ctx), addr, n, d)
		}
		d := n.dialing
		p.mu.Unlock()
		if best != nil && (d == nil || !best.stalled.Load()) {
			return best, nil
		}
		// None yet, or only connections that wait on a request given
		// up: the connection being dialled is waited for.
		select {
		case <-d.done:
			if d.err != nil {
				return nil, d.err
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

var errIdleTooLong = errors.New("proxy: connection idle too long")

// dialFor dials addr and adds the connection to n. A dial outlives the
// request that started it (bounded by the dialer's timeout), and its
// connection is kept.
func (p *pipes) dialFor(ctx context.Context, addr string, n *pipeNode, d *pipeDial) {
	nc, err := p.dial(ctx, "tcp", addr)
	if err != nil {
		err = fmt.Errorf("proxy: dialling %s: %w", addr, err)
	}
	var c *pipeConn
	p.mu.Lock()
	if err == nil {
		if p.closed {
			nc.Close()
			err = errPipesClosed
		} else {
			c = &pipeConn{p: p, node: n, addr: addr, c: nc, br: bufio.NewReaderSize(nc, upBufSize)}
			c.used.Store(time.Now().UnixNano())
			n.conns = append(n.conns, c)
		}
	}
	d.err = err
	n.dialing = nil
	p.mu.Unlock()
	close(d.done)
	if c != nil {
		c.read()
	}
}

// remove forgets c, which failed.
func (p *pipes) remove(c *pipeConn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := c.node
	for i, x := range n.conns {
		if x == c {
			n.conns = append(n.conns[:i:i], n.conns[i+1:]...)
			break
		}
	}
}

// dropIdle closes addr's connections that carry no request and have
// carried none since before unix ns.
func (p *pipes) dropIdle(addr string, before int64) {
	p.mu.Lock()
	var idle []*pipeConn
	if n := p.nodes[addr]; n != nil {
		idle = takeIdle(n, before)
	}
	p.mu.Unlock()
	for _, c := range idle {
		c.fail(errIdleClosed)
	}
}

var errIdleClosed = errors.New("proxy: idle connection closed")

// takeIdle removes and returns n's connections that carry no request
// and were last idle before unix ns.
func takeIdle(n *pipeNode, before int64) []*pipeConn {
	var idle []*pipeConn
	kept := n.conns[:0]
	for _, c := range n.conns {
		if c.pending.Load() == 0 && c.used.Load() < before {
			idle = append(idle, c)
		} else {
			kept = append(kept, c)
		}
	}
	clear(n.conns[len(kept):])
	n.conns = kept
	return idle
}

// closeIdle closes every connection that carries no request.
func (p *pipes) closeIdle() {
	p.mu.Lock()
	var idle []*pipeConn
	for _, n := range p.nodes {
		idle = append(idle, takeIdle(n, math.MaxInt64)...)
	}
	p.mu.Unlock()
	for _, c := range idle {
		c.fail(errIdleClosed)
	}
}

// close closes every connection; the requests they carry fail, and
// later lookups get errPipesClosed.
func (p *pipes) close() {
	p.mu.Lock()
	p.closed = true
	var all []*pipeConn
	for _, n := range p.nodes {
		all = append(all, n.conns...)
		n.conns = nil
	}
	p.mu.Unlock()
	for _, c := range all {
		c.fail(errPipesClosed)
	}
}

// pipeConn is one pipelined connection to a node.
type pipeConn struct {
	p    *pipes
	node *pipeNode
	addr string
	c    net.Conn
	br   *bufio.Reader // the reader goroutine's
	seen seenValues    // the reader goroutine's

	pending atomic.Int32 // requests queued and not answered
	served  atomic.Bool  // an answer was read
	stalled atomic.Bool  // a request given up waits on it (deadline set)
	used    atomic.Int64 // unix ns when it last carried no request

	mu        sync.Mutex
	queue     []*pipeCall // guarded by mu; awaiting answers, in the order written
	qbuf      [pipeDepth]*pipeCall
	wbuf      []byte // guarded by mu; requests queued, not yet written
	spare     []byte // guarded by mu; the other write buffer
	writing   bool   // guarded by mu; a lookup is writing the queue
	broken    error  // guarded by mu; set once it failed: it takes no request
	brokenAt  int64  // guarded by mu; unix ns when broken was set
	abandoned int    // guarded by mu; requests given up in queue
}

// idleSince: c has carried no request for idleFor; now is read once.
func (c *pipeConn) idleSince(now *time.Time, idleFor time.Duration) bool {
	if now.IsZero() {
		*now = time.Now()
	}
	return now.UnixNano()-c.used.Load() >= int64(idleFor)
}

// pipeCall is one request on a pipelined connection.
type pipeCall struct {
	wake chan struct{} // buffered: the answer came, or the lookup gave up
	// state: 0 waiting, 1 answered (resp, err, started set before), 2
	// given up; changed under the connection's mu.
	state   atomic.Int32
	resp    *Response
	err     error
	started bool
}

// signal wakes the call's lookup, if not woken already.
func (call *pipeCall) signal() {
	select {
	case call.wake <- struct{}{}:
	default:
	}
}

// SetDeadline wakes the call's lookup: it is how an inlineCtx
// interrupts a first attempt waiting for its answer.
func (call *pipeCall) SetDeadline(time.Time) error {
	call.signal()
	return nil
}

// settle records call's outcome; the caller holds c.mu. It reports
// whether the lookup waits for it (and must be woken).
func (c *pipeConn) settle(call *pipeCall, resp *Response, err error, started bool) bool {
	c.pending.Add(-1)
	if call.state.Load() == 2 {
		c.abandoned--
		return false
	}
	call.resp, call.err, call.started = resp, err, started
	call.state.Store(1)
	return true
}

// do queues GET <path> on c, writes the queue unless a write is under
// way, and waits for the answer. started says whether any byte of the
// answer came (before that, a failure of a connection that served is
// the node having closed it).
func (c *pipeConn) do(ctx context.Context, path, version string) (resp *Response, started bool, err error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	call := &pipeCall{wake: make(chan struct{}, 1)}
	c.mu.Lock()
	if c.broken != nil {
		err := c.broken
		c.mu.Unlock()
		return nil, false, err
	}
	b := append(c.wbuf, "GET "...)
	b = append(b, path...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, c.addr...)
	b = append(b, "\r\n"+wire.HeaderVersion+": "...)
	b = append(b, version...)
	b = append(b, "\r\n\r\n"...)
	c.wbuf = b
	if len(c.queue) == 0 {
		c.queue = c.qbuf[:0]
	}
	c.queue = append(c.queue, call)
	c.pending.Add(1)
	lead := !c.writing
	c.writing = true
	c.mu.Unlock()
	if lead {
		// Lookups already runnable run first and queue theirs, which
		// then go in this write.
		runtime.Gosched()
		c.write(ctx)
	}
	if a, ok := ctx.(*inlineCtx); ok {
		if a.hold(call) {
			<-call.wake
			a.release()
		}
	} else {
		select {
		case <-call.wake:
		case <-ctx.Done():
		}
	}
	if call.state.Load() != 1 && !c.giveUp(call) {
		err := ctx.Err()
		if err == nil {
			err = context.Canceled
		}
		return nil, false, fmt.Errorf("proxy: GET %s: %w", c.addr, err)
	}
	return call.resp, call.started, call.err
}

// giveUp marks call given up, unless it was answered meanwhile (then
// false). Its answer will be read and dropped; c takes no new request
// and is closed unless answers come within drainGrace.
func (c *pipeConn) giveUp(call *pipeCall) (answered bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if call.state.Load() == 1 {
		return true
	}
	call.state.Store(2)
	c.abandoned++
	if !c.stalled.Load() {
		c.stalled.Store(true)
		c.c.SetDeadline(time.Now().Add(drainGrace))
	}
	return false
}

// write writes the queued requests until none is left. A first attempt
// interrupted meanwhile (a write blocked on a node that stopped reading)
// fails the connection.
func (c *pipeConn) write(ctx context.Context) {
	a, inline := ctx.(*inlineCtx)
	if inline && !a.hold(c.c) {
		inline = false
	}
	for {
		c.mu.Lock()
		if len(c.wbuf) == 0 || c.broken != nil {
			c.writing = false
			c.mu.Unlock()
			break
		}
		b := c.wbuf
		c.wbuf, c.spare = c.spare[:0], nil
		c.mu.Unlock()
		_, err := c.c.Write(b)
		if err != nil {
			if inline {
				a.release()
			}
			c.fail(fmt.Errorf("proxy: GET %s: %w", c.addr, err))
			return
		}
		if cap(b) <= maxKeptWriteBuf {
			c.mu.Lock()
			c.spare = b[:0]
			c.mu.Unlock()
		}
	}
	if inline && !a.release() {
		// The interruption may have set the connection's deadline.
		c.fail(fmt.Errorf("proxy: GET %s: interrupted while writing", c.addr))
	}
}

// read reads the answers in order and hands each to its request, until
// the connection fails or an answer ends it.
func (c *pipeConn) read() {
	for {
		if _, err := c.br.Peek(1); err != nil {
			c.fail(fmt.Errorf("proxy: GET %s: %w: %w", c.addr, errAwaiting, err))
			return
		}
		c.mu.Lock()
		empty := len(c.queue) == 0
		c.mu.Unlock()
		if empty {
			c.fail(fmt.Errorf("proxy: GET %s: an answer to no request", c.addr))
			return
		}
		resp, keep, err := readAnswer(c.br, c.addr, c.p.maxValue, &c.seen)
		c.mu.Lock()
		if c.broken != nil {
			// Closed meanwhile (shutdown): every request failed.
			c.mu.Unlock()
			return
		}
		call := c.queue[0]
		c.queue[0] = nil
		c.queue = c.queue[1:]
		wake := c.settle(call, resp, err, true)
		if c.stalled.Load() {
			// Answers come: the node lives. A given-up request left
			// waits drainGrace more; none left, no deadline.
			if c.abandoned == 0 {
				c.stalled.Store(false)
				c.c.SetDeadline(time.Time{})
			} else {
				c.c.SetDeadline(time.Now().Add(drainGrace))
			}
		}
		if len(c.queue) == 0 {
			c.used.Store(time.Now().UnixNano())
		}
		c.mu.Unlock()
		if wake {
			call.signal()
		}
		c.served.Store(true)
		if err != nil || !keep {
			if err == nil {
				err = fmt.Errorf("proxy: GET %s: the node ends the connection", c.addr)
			}
			c.fail(err)
			return
		}
	}
}

// brokeAt is when c failed, in unix ns (0 if it has not).
func (c *pipeConn) brokeAt() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.brokenAt
}

// fail ends c: it is closed and forgotten, and the requests it carries,
// none of whose answer began, get err.
func (c *pipeConn) fail(err error) {
	c.mu.Lock()
	if c.broken != nil {
		c.mu.Unlock()
		return
	}
	c.broken = err
	c.brokenAt = time.Now().UnixNano()
	var woken []*pipeCall
	for i, call := range c.queue {
		if c.settle(call, nil, err, false) {
			woken = append(woken, call)
		}
		c.queue[i] = nil
	}
	c.queue = nil
	c.mu.Unlock()
	c.c.Close()
	c.p.remove(c)
	for _, call := range woken {
		call.signal()
	}
}
