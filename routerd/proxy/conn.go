package proxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http/httputil"
	"strconv"
	"sync"
	"time"

	"spangle/shared/wire"
)

// A batch lookup (a POST of its keys) goes to storaged through getConns
// rather than net/http.Transport: the calling goroutine writes the
// request and reads the answer itself on a kept-alive connection of its
// own, where the Transport hands each request to a writer goroutine and
// each answer back from a reader goroutine, and allocates a Request, a
// Response and their headers. It is as read-only as a GET, so it too is
// sent once more when a kept-alive connection turns out closed. Single
// GETs are pipelined instead (pipe.go), and take this way only once the
// upstream is closed.

// maxKeptWriteBuf bounds the write buffer a connection keeps between
// requests: a batch's is as big as its keys; a bigger one is let go.
const maxKeptWriteBuf = 64 << 10

// upBufSize is each connection's read buffer: a status line and headers
// longer than it are refused, as net/http refuses headers over its limit.
const upBufSize = 4 << 10

// errHeaderValue: a header value with a control character (a version that
// would split the request) is never sent.
var errHeaderValue = errors.New("proxy: control character in a header value")

// upConn is one kept-alive connection to a node.
type upConn struct {
	c    net.Conn
	br   *bufio.Reader
	wbuf []byte
	used time.Time // when it was last put back idle
	seen seenValues
}

// seenValues are the header values of a connection's last answer: a
// node sends the same Content-Type, Last-Modified and version in answer
// after answer, and an equal value is not allocated again.
type seenValues struct {
	contentType, lastModified, version string
}

// intern returns b as a string, *last when equal to it, and remembers it.
func intern(last *string, b []byte) string {
	if string(b) == *last {
		return *last
	}
	*last = string(b)
	return *last
}

// getConns keeps idle connections per node address. It is safe for
// concurrent use.
type getConns struct {
	dial    func(ctx context.Context, network, addr string) (net.Conn, error)
	maxIdle int
	idleFor time.Duration

	mu      sync.Mutex
	idle    map[string][]*upConn        // guarded by mu; most recently used last
	waiters map[string][]chan<- *upConn // guarded by mu; requests waiting for a connection, oldest first
	closed  bool                        // guarded by mu; set by close: nothing is kept idle any more
}

func newGetConns(dial func(ctx context.Context, network, addr string) (net.Conn, error), maxIdle int, idleFor time.Duration) *getConns {
	return &getConns{dial: dial, maxIdle: maxIdle, idleFor: idleFor, idle: map[string][]*upConn{},
		waiters: map[string][]chan<- *upConn{}}
}

// acquire returns a connection to addr: an idle one (reused), else
// whichever comes first of a new one dialled for this request and one
// another request puts back meanwhile, as net/http's Transport does. A
// TLS handshake takes milliseconds on a loaded machine; the connection
// it makes is kept whoever ends up using it, and a dial outlives the
// request that started it (bounded by the dialer's own timeout).
func (p *getConns) acquire(ctx context.Context, addr string) (c *upConn, reused bool, err error) {
	if c := p.take(addr, time.Now()); c != nil {
		return c, true, nil
	}
	w := make(chan *upConn, 1)
	p.mu.Lock()
	p.waiters[addr] = append(p.waiters[addr], w)
	p.mu.Unlock()
	type dialed struct {
		c   *upConn
		err error
	}
	dc := make(chan dialed, 1)
	go func() {
		nc, err := p.dial(context.WithoutCancel(ctx), "tcp", addr)
		if err != nil {
			dc <- dialed{err: err}
			return
		}
		dc <- dialed{c: &upConn{c: nc, br: bufio.NewReaderSize(nc, upBufSize)}}
	}()
	keepDialed := func() {
		if d := <-dc; d.c != nil {
			p.put(addr, d.c, time.Now())
		}
	}
	select {
	case c := <-w: // put handed it over and forgot w
		go keepDialed()
		return c, true, nil
	case d := <-dc:
		p.forget(addr, w)
		if d.err != nil {
			return nil, false, fmt.Errorf("proxy: dialling %s: %w", addr, d.err)
		}
		return d.c, false, nil
	case <-ctx.Done():
		p.forget(addr, w)
		go keepDialed()
		return nil, false, ctx.Err()
	}
}

// forget removes waiter w of addr; a connection handed to it meanwhile
// goes back to the pool.
func (p *getConns) forget(addr string, w chan *upConn) {
	p.mu.Lock()
	ws := p.waiters[addr]
	for i, x := range ws {
		if x == w {
			p.waiters[addr] = append(ws[:i:i], ws[i+1:]...)
			if len(p.waiters[addr]) == 0 {
				delete(p.waiters, addr)
			}
			p.mu.Unlock()
			return
		}
	}
	p.mu.Unlock()
	// put popped w: its send is under way.
	p.put(addr, <-w, time.Now())
}

// take returns an idle connection to addr, or nil; connections idle
// longer than idleFor are closed instead (the node may have dropped them).
func (p *getConns) take(addr string, now time.Time) *upConn {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.idle[addr]
	for len(s) > 0 {
		c := s[len(s)-1]
		s[len(s)-1] = nil
		s = s[:len(s)-1]
		if now.Sub(c.used) < p.idleFor {
			p.idle[addr] = s
			return c
		}
		c.c.Close()
	}
	delete(p.idle, addr)
	return nil
}

// put hands c to the oldest request waiting for a connection to addr,
// else keeps it idle for the next one, or closes it when addr has
// maxIdle idle already.
func (p *getConns) put(addr string, c *upConn, now time.Time) {
	c.used = now
	p.mu.Lock()
	if ws := p.waiters[addr]; len(ws) > 0 {
		w := ws[0]
		if len(ws) == 1 {
			delete(p.waiters, addr)
		} else {
			p.waiters[addr] = ws[1:]
		}
		p.mu.Unlock()
		w <- c
		return
	}
	if s := p.idle[addr]; len(s) < p.maxIdle && !p.closed {
		p.idle[addr] = append(s, c)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	c.c.Close()
}

// dropIdle closes addr's idle connections.
func (p *getConns) dropIdle(addr string) {
	p.mu.Lock()
	s := p.idle[addr]
	delete(p.idle, addr)
	p.mu.Unlock()
	for _, c := range s {
		c.c.Close()
	}
}

// close closes every idle connection, and each one put back later (an
// abandoned request's drain or a dial that outlived its request ends
// after it): nothing is left open once routerd stops.
func (p *getConns) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.closeIdle()
}

// closeIdle closes every idle connection.
func (p *getConns) closeIdle() {
	p.mu.Lock()
	idle := p.idle
	p.idle = map[string][]*upConn{}
	p.mu.Unlock()
	for _, s := range idle {
		for _, c := range s {
			c.c.Close()
		}
	}
}

// get sends GET <path> to addr pinned to version and reads the answer;
// with a body (not nil) it sends a batch lookup instead: POST <path> of
// body, asking for the compact answer.
// A kept-alive connection the node closed meanwhile fails before any
// answer byte; the request is then sent once more on a new connection,
// as net/http does for a GET, after the node's other idle connections
// are closed (a node that restarted closed them all).
func (p *getConns) get(ctx context.Context, addr, path, version string, body []byte, maxValue int64) (*Response, error) {
	if !validHeaderValue(version) {
		return nil, errHeaderValue
	}
	for attempt := 0; ; attempt++ {
		c, reused, err := p.acquire(ctx, addr)
		if err != nil {
			return nil, err
		}
		resp, keep, started, err := c.roundTrip(ctx, addr, path, version, body, maxValue)
		if err != nil {
			switch {
			case !started && errors.Is(err, errAwaiting) && ctx.Err() != nil && isTimeout(err):
				// Abandoned while waiting for the node's answer (the
				// lookup timed out, another replica won, the client
				// left): the request was sent whole, so the answer
				// can still be read and the connection kept, which
				// over TLS saves a handshake (about 1 ms of CPU on
				// each side) for the next request.
				go p.drain(addr, c, maxValue)
			default:
				c.c.Close()
			}
			if reused && !started && attempt == 0 && ctx.Err() == nil {
				// The node closed a kept-alive connection: it most
				// likely restarted and closed every other one too, so
				// none of them is tried before a new connection.
				p.dropIdle(addr)
				continue
			}
			if cerr := ctx.Err(); cerr != nil {
				return nil, fmt.Errorf("%w (%w)", cerr, err)
			}
			return nil, err
		}
		if keep {
			p.put(addr, c, time.Now())
		} else {
			c.c.Close()
		}
		return resp, nil
	}
}

// errAwaiting marks a failure after the request was sent whole, before
// any byte of the answer.
var errAwaiting = errors.New("awaiting the answer")

// drainGrace bounds how long an abandoned request's answer is waited
// for before its connection is closed.
const drainGrace = time.Second

// drain reads the answer of an abandoned request on c, then keeps c if
// it may serve another one.
func (p *getConns) drain(addr string, c *upConn, maxValue int64) {
	c.c.SetDeadline(time.Now().Add(drainGrace))
	_, keep, err := readAnswer(c.br, addr, maxValue, &c.seen)
	if err != nil || !keep || c.c.SetDeadline(time.Time{}) != nil {
		c.c.Close()
		return
	}
	p.put(addr, c, time.Now())
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// aLongTimeAgo is a deadline that has passed: setting it wakes any
// reader or writer of the connection at once.
var aLongTimeAgo = time.Unix(1, 0)

// roundTrip writes the request and reads the answer on c. keep says
// whether c may serve another request; started whether any byte of the
// answer arrived (before that, a failure of a reused connection is the
// node having closed it).
func (c *upConn) roundTrip(ctx context.Context, addr, path, version string, body []byte, maxValue int64) (resp *Response, keep, started bool, err error) {
	if err := ctx.Err(); err != nil {
		return nil, false, false, err
	}
	stop := watch(ctx, c.c)
	defer func() {
		if !stop() {
			// ctx ended meanwhile: the deadline may be set, so the
			// connection serves no further request.
			keep = false
		}
	}()
	method := "GET "
	if body != nil {
		method = "POST "
	}
	b := append(c.wbuf[:0], method...)
	b = append(b, path...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, addr...)
	b = append(b, "\r\n"+wire.HeaderVersion+": "...)
	b = append(b, version...)
	if body != nil {
		// Head and body in one write.
		b = append(b, "\r\nAccept: "+wire.BatchAccept+"\r\nContent-Length: "...)
		b = strconv.AppendInt(b, int64(len(body)), 10)
		b = append(b, "\r\n\r\n"...)
		b = append(b, body...)
	} else {
		b = append(b, "\r\n\r\n"...)
	}
	if cap(b) <= maxKeptWriteBuf {
		c.wbuf = b
	}
	if _, err := c.c.Write(b); err != nil {
		return nil, false, false, fmt.Errorf("proxy: %s%s: %w", method, addr, err)
	}
	if _, err := c.br.Peek(1); err != nil {
		return nil, false, false, fmt.Errorf("proxy: %s%s: %w: %w", method, addr, errAwaiting, err)
	}
	resp, keep, err = readAnswer(c.br, addr, maxValue, &c.seen)
	return resp, keep, true, err
}

// readAnswer reads one HTTP/1.1 answer to a GET from br: status, the
// headers routerd passes on, and, for a 200, the body (at most maxValue
// bytes). keep says whether the connection may be used again. seen
// spares allocating header values equal to the last answer's.
func readAnswer(br *bufio.Reader, addr string, maxValue int64, seen *seenValues) (resp *Response, keep bool, err error) {
	fail := func(what string) (*Response, bool, error) {
		return nil, false, fmt.Errorf("proxy: GET %s: %s", addr, what)
	}
	var status int
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return nil, false, fmt.Errorf("proxy: GET %s: reading the status line: %w", addr, err)
		}
		// "HTTP/1.x NNN reason"
		if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' || (len(line) > 12 && line[12] != ' ' && line[12] != '\r') {
			return fail("malformed status line")
		}
		status, err = strconv.Atoi(string(line[9:12]))
		if err != nil || status < 100 {
			return fail("malformed status code")
		}
		keep = line[7] == '1'
		if status >= 200 {
			break
		}
		if status == 101 {
			return fail("unexpected 101")
		}
		// An informational answer: its headers, then the real one.
		if err := skipHeaders(br); err != nil {
			return nil, false, fmt.Errorf("proxy: GET %s: %w", addr, err)
		}
	}
	resp = &Response{Status: status}
	length, chunked := int64(-1), false
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return nil, false, fmt.Errorf("proxy: GET %s: reading headers: %w", addr, err)
		}
		line = trimEOL(line)
		if len(line) == 0 {
			break
		}
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 {
			return fail("malformed header line")
		}
		name, value := line[:colon], bytes.TrimSpace(line[colon+1:])
		switch {
		case wire.EqualFoldASCII(name, "Content-Length"):
			n, err := strconv.ParseInt(string(value), 10, 64)
			if err != nil || n < 0 || (length >= 0 && n != length) {
				return fail("bad Content-Length")
			}
			length = n
		case wire.EqualFoldASCII(name, "Transfer-Encoding"):
			if !wire.EqualFoldASCII(value, "chunked") {
				return fail("unsupported Transfer-Encoding")
			}
			chunked = true
		case wire.EqualFoldASCII(name, "Connection"):
			if wire.EqualFoldASCII(value, "close") {
				keep = false
			}
		case wire.EqualFoldASCII(name, "Content-Type"):
			resp.ContentType = intern(&seen.contentType, value)
		case wire.EqualFoldASCII(name, "Last-Modified"):
			resp.LastModified = intern(&seen.lastModified, value)
		case wire.EqualFoldASCII(name, wire.HeaderVersion):
			resp.Version = intern(&seen.version, value)
		case wire.EqualFoldASCII(name, "Retry-After"):
			resp.RetryAfter = string(value)
		}
	}
	var body io.Reader
	switch {
	case status == 204 || status == 304:
		return resp, keep, nil
	case chunked:
		// Rare from storaged; the connection is not reused after one.
		body, keep = httputil.NewChunkedReader(br), false
	case length >= 0:
		body = io.LimitReader(br, length)
	default:
		body, keep = br, false // until the node closes
	}
	if status != 200 {
		// Read a little so the connection can be reused.
		if length < 0 || length > 4<<10 {
			return resp, false, nil
		}
		if _, err := io.Copy(io.Discard, body); err != nil {
			return resp, false, nil
		}
		return resp, keep, nil
	}
	if length > maxValue {
		return nil, false, fmt.Errorf("proxy: %s: value of %d bytes over the limit", addr, length)
	}
	if length >= 0 && !chunked {
		resp.Body = make([]byte, length)
		if _, err := io.ReadFull(br, resp.Body); err != nil {
			return nil, false, fmt.Errorf("proxy: reading value from %s: %w", addr, err)
		}
		return resp, keep, nil
	}
	b, err := io.ReadAll(io.LimitReader(body, maxValue+1))
	if err != nil {
		return nil, false, fmt.Errorf("proxy: reading value from %s: %w", addr, err)
	}
	if int64(len(b)) > maxValue {
		return nil, false, fmt.Errorf("proxy: %s: value over the limit", addr)
	}
	resp.Body = b
	return resp, keep, nil
}

func skipHeaders(br *bufio.Reader) error {
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return fmt.Errorf("reading headers: %w", err)
		}
		if len(trimEOL(line)) == 0 {
			return nil
		}
	}
}

func trimEOL(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte("\n"))
	return bytes.TrimSuffix(b, []byte("\r"))
}

// validHeaderValue: no control characters but tab.
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}
