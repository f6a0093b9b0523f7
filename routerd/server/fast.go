package server

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"spangle/shared/wire"
)

// The app-facing server answers a plain HTTP/1.1 GET or HEAD of a key on
// its own connection loop rather than net/http's (issue 31): net/http
// allocates a Request, its URL and header maps for every request, starts
// a goroutine per request to watch the connection while the handler runs
// (one more read, two deadline changes and two goroutine switches) and
// formats a Date per answer; a key lookup needs none of it. Everything
// else on a connection (POSTs, the status pages, /healthz, /metrics,
// HTTP/1.0, bodies, Expect, odd or oversized headers, TLS) goes to
// net/http: the connection, with the bytes already read, is handed over
// for the rest of its life, so what net/http answered before it still
// answers.
//
// A lookup served here does not see its client leave (net/http's
// per-request watcher is what noticed it): it runs to its own end,
// which the proxy timeout bounds.

// fastBufSize bounds a request's line and headers on the fast path; a
// longer one goes to net/http, whose own limit applies.
const fastBufSize = 4 << 10

// Timeouts of the fast path, net/http's in Serve.
const (
	readHeaderTimeout = 5 * time.Second
	idleTimeout       = 2 * time.Minute
	// idleSlack: the idle deadline is moved at most this often, since
	// each move costs a timer change; a connection is then closed after
	// idleTimeout - idleSlack to idleTimeout of silence.
	idleSlack = 10 * time.Second
)

// fastServer accepts connections, serves key lookups on them and hands
// the others to net/http through handoff. It is safe for concurrent use.
type fastServer struct {
	s       *Server
	l       net.Listener
	base    context.Context // the lookups' context: values, no cancellation
	handoff *handoff

	mu      sync.Mutex
	conns   map[*fastConn]bool // guarded by mu; true while idle
	closing bool               // guarded by mu
	gone    chan struct{}      // guarded by mu; closed when conns empties while closing
}

func newFastServer(ctx context.Context, s *Server, l net.Listener) *fastServer {
	return &fastServer{s: s, l: l, base: context.WithoutCancel(ctx),
		handoff: &handoff{Listener: l, conns: make(chan net.Conn), done: make(chan struct{})},
		conns:   map[*fastConn]bool{}, gone: make(chan struct{})}
}

// handoff is the listener net/http serves: it yields the connections the
// fast path gave up on. Closing it closes the real listener.
type handoff struct {
	net.Listener
	conns chan net.Conn
	once  sync.Once
	done  chan struct{} // closed by Close or when accepting failed
	err   error         // why accepting ended; written before done closes
}

func (h *handoff) Accept() (net.Conn, error) {
	select {
	case c := <-h.conns:
		return c, nil
	case <-h.done:
		if h.err != nil {
			return nil, h.err
		}
		return nil, net.ErrClosed
	}
}

func (h *handoff) Close() error {
	err := h.Listener.Close()
	h.end(nil)
	return err
}

func (h *handoff) end(err error) {
	h.once.Do(func() {
		h.err = err
		close(h.done)
	})
}

// give hands c to net/http, or closes it when net/http serves no more.
func (h *handoff) give(c net.Conn) {
	select {
	case h.conns <- c:
	case <-h.done:
		c.Close()
	}
}

// accept runs until the listener closes; a failure to accept other than
// a closed listener is retried after a pause, as net/http does.
func (f *fastServer) accept() {
	var pause time.Duration
	for {
		c, err := f.l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				f.handoff.end(nil)
				return
			}
			select {
			case <-f.handoff.done:
				return
			default:
			}
			pause = min(max(2*pause, 5*time.Millisecond), time.Second)
			f.s.log.Warn("server: accepting a connection", zap.Error(err), zap.Duration("retry_in", pause))
			time.Sleep(pause)
			continue
		}
		pause = 0
		if _, ok := c.(*tls.Conn); ok {
			// TLS (and HTTP/2 on it) is net/http's.
			go f.handoff.give(c)
			continue
		}
		go f.serve(c)
	}
}

// shutdown closes the idle connections and waits for the others to end
// their request, or for ctx, when it closes them.
func (f *fastServer) shutdown(ctx context.Context) error {
	f.mu.Lock()
	f.closing = true
	for fc, idle := range f.conns {
		if idle {
			fc.c.Close()
		}
	}
	if len(f.conns) == 0 {
		close(f.gone)
	}
	f.mu.Unlock()
	select {
	case <-f.gone:
		return nil
	case <-ctx.Done():
		f.mu.Lock()
		for fc := range f.conns {
			fc.c.Close()
		}
		f.mu.Unlock()
		return ctx.Err()
	}
}

// setIdle records fc's state; false when the server is closing and fc
// must end.
func (f *fastServer) setIdle(fc *fastConn, idle bool) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closing {
		return false
	}
	f.conns[fc] = idle
	return true
}

func (f *fastServer) forget(fc *fastConn) {
	f.mu.Lock()
	if _, ok := f.conns[fc]; !ok {
		f.mu.Unlock()
		return
	}
	delete(f.conns, fc)
	if f.closing && len(f.conns) == 0 {
		close(f.gone)
	}
	f.mu.Unlock()
}

// fastConn is one connection served by the fast path; only its goroutine
// uses it.
type fastConn struct {
	c        net.Conn
	br       *bufio.Reader
	bw       *bufio.Writer
	deadline time.Time // the read deadline set; zero: none known
	req      *http.Request
	w        fastResponse
}

// prefixConn is a connection handed to net/http with the bytes the fast
// path read but did not use still in br.
type prefixConn struct {
	net.Conn
	br *bufio.Reader
}

func (c *prefixConn) Read(p []byte) (int, error) { return c.br.Read(p) }

// CloseWrite lets net/http half-close the connection after an error
// answer, as it does on a connection of its own.
func (c *prefixConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

func (f *fastServer) serve(c net.Conn) {
	fc := &fastConn{c: c, br: bufio.NewReaderSize(c, fastBufSize), bw: bufio.NewWriterSize(c, fastBufSize)}
	fc.req = (&http.Request{Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: http.Header{}}).WithContext(f.base)
	fc.w.h = http.Header{}
	handed := false
	defer func() {
		f.forget(fc)
		if !handed {
			c.Close()
		}
	}()
	for {
		if !f.setIdle(fc, true) {
			return
		}
		now := time.Now()
		if fc.deadline.Sub(now) < idleTimeout-idleSlack {
			fc.deadline = now.Add(idleTimeout)
			if c.SetReadDeadline(fc.deadline) != nil {
				return
			}
		}
		if _, err := fc.br.Peek(1); err != nil {
			return
		}
		if !f.setIdle(fc, false) {
			return
		}
		n, ok := fc.readHead()
		if !ok {
			return
		}
		head, _ := fc.br.Peek(n) // buffered: no error
		rq, fast := parseFast(head)
		if fast {
			fc.br.Discard(n)
		}
		if !fast {
			if c.SetReadDeadline(time.Time{}) != nil {
				return
			}
			// net/http owns c from here, and forgets it on its own
			// shutdown; this loop no longer counts it.
			handed = true
			f.handoff.give(&prefixConn{Conn: c, br: fc.br})
			return
		}
		if !fc.answer(f.s, rq) {
			return
		}
	}
}

// readHead waits until br holds a whole request head (through its empty
// line) and returns its length; or, when the head is longer than the
// buffer or its lines are not CRLF-ended, the bytes buffered, for
// net/http to read on. ok is false when the connection failed.
func (fc *fastConn) readHead() (n int, ok bool) {
	timed := false
	for {
		b, _ := fc.br.Peek(fc.br.Buffered())
		if end, done := headEnd(b); done {
			if timed {
				fc.deadline = time.Time{} // re-armed before the next request
			}
			if end < 0 {
				return len(b), true
			}
			return end, true
		}
		if len(b) == fastBufSize {
			return len(b), true
		}
		if !timed {
			timed = true
			if fc.c.SetReadDeadline(time.Now().Add(readHeaderTimeout)) != nil {
				return 0, false
			}
		}
		if _, err := fc.br.Peek(len(b) + 1); err != nil {
			return 0, false
		}
	}
}

// headEnd finds the end of a request head in b: end is the length through
// its empty line, or -1 when a line ends otherwise than in CRLF (net/http
// takes it); done is false when b holds no whole head yet.
func headEnd(b []byte) (end int, done bool) {
	off := 0
	for {
		i := bytes.IndexByte(b[off:], '\n')
		if i < 0 {
			return 0, false
		}
		if i == 0 || b[off+i-1] != '\r' {
			return -1, true
		}
		if i == 1 {
			return off + 2, true
		}
		off += i + 1
	}
}

// fastRequest is what the fast path reads of a request.
type fastRequest struct {
	head    bool
	target  wire.Target
	version string // the first X-Sequins-Version; "" if none
	close   bool   // Connection: close
}

// parseFast reads a request head; fast is false unless it is a GET or
// HEAD of a key (wire.ParsePath finds one), in HTTP/1.1, with one Host, no body and no header
// net/http would answer or act on differently.
func parseFast(b []byte) (rq fastRequest, fast bool) {
	line, rest, ok := bytes.Cut(b, []byte("\r\n"))
	if !ok {
		return rq, false
	}
	switch {
	case bytes.HasPrefix(line, []byte("GET ")):
		line = line[4:]
	case bytes.HasPrefix(line, []byte("HEAD ")):
		line, rq.head = line[5:], true
	default:
		return rq, false
	}
	target, proto, ok := bytes.Cut(line, []byte(" "))
	if !ok || string(proto) != "HTTP/1.1" || !plainPath(target) {
		return rq, false
	}
	hosts := 0
	for {
		// A head cut short (longer than the buffer) has a last line
		// without its CRLF: net/http's.
		if line, rest, ok = bytes.Cut(rest, []byte("\r\n")); !ok {
			return rq, false
		}
		if len(line) == 0 {
			break
		}
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 || !token(line[:colon]) {
			return rq, false
		}
		name, value := line[:colon], bytes.Trim(line[colon+1:], " \t")
		if !fieldValue(value) {
			return rq, false
		}
		switch {
		case wire.EqualFoldASCII(name, "Host"):
			if hosts++; !hostValue(value) {
				return rq, false
			}
		case wire.EqualFoldASCII(name, wire.HeaderVersion):
			if rq.version == "" {
				rq.version = string(value)
			}
		case wire.EqualFoldASCII(name, "Connection"):
			switch {
			case wire.EqualFoldASCII(value, "close"):
				rq.close = true
			case !wire.EqualFoldASCII(value, "keep-alive"):
				return rq, false
			}
		case wire.EqualFoldASCII(name, "Content-Length"):
			if string(value) != "0" {
				return rq, false
			}
		case wire.EqualFoldASCII(name, "Transfer-Encoding"), wire.EqualFoldASCII(name, "Expect"), wire.EqualFoldASCII(name, "Upgrade"):
			return rq, false
		}
	}
	if hosts != 1 {
		return rq, false
	}
	switch string(target) {
	case "/", wire.PathHealth, wire.PathMetrics, wire.PathFavicon:
		return rq, false
	}
	// A bad path and a db's status page are net/http's too.
	t, err := wire.ParsePath(string(target))
	if err != nil || !t.HasKey {
		return rq, false
	}
	rq.target = t
	return rq, true
}

// plainPath: an origin-form path of characters net/url keeps as they
// are, so that it is the request's EscapedPath; no query.
func plainPath(p []byte) bool {
	if len(p) == 0 || p[0] != '/' {
		return false
	}
	for _, c := range p {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case bytes.IndexByte([]byte("-._~!$&'()*+,;=:@/%"), c) >= 0:
		default:
			return false
		}
	}
	return true
}

// token: an HTTP header name.
func token(b []byte) bool {
	for _, c := range b {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case bytes.IndexByte([]byte("!#$%&'*+-.^_`|~"), c) >= 0:
		default:
			return false
		}
	}
	return true
}

// fieldValue: no control characters but tab.
func fieldValue(b []byte) bool {
	for _, c := range b {
		if (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// hostValue: a host[:port] of the plainest kind; anything else is
// net/http's to judge.
func hostValue(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '.' || c == '-' || c == ':' || c == '[' || c == ']' || c == '_':
		default:
			return false
		}
	}
	return true
}

// answer serves one key lookup and writes its answer; false when the
// connection is to end.
func (fc *fastConn) answer(s *Server, rq fastRequest) bool {
	start := time.Now()
	r, w := fc.req, &fc.w
	r.Method = http.MethodGet
	if rq.head {
		r.Method = http.MethodHead
	}
	clear(r.Header)
	if rq.version != "" {
		r.Header[wire.HeaderVersion] = []string{rq.version}
	}
	w.reset(rq.head)
	s.metrics.observe(s.lookup(w, r, rq.target), time.Since(start).Seconds())
	if w.writeTo(fc.bw, start, rq.close) != nil || fc.bw.Flush() != nil {
		return false
	}
	return !rq.close
}

// fastResponse is the http.ResponseWriter of the fast path: it holds the
// answer until the handler returns, then writeTo sends it whole. It is
// reused for the connection's next request.
type fastResponse struct {
	h      http.Header
	status int // 0 until WriteHeader
	head   bool
	body   []byte
}

func (w *fastResponse) reset(head bool) {
	clear(w.h)
	w.status, w.head, w.body = 0, head, w.body[:0]
}

func (w *fastResponse) Header() http.Header { return w.h }

func (w *fastResponse) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *fastResponse) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	if w.head || !bodyAllowed(w.status) {
		return len(b), nil
	}
	if len(w.body)+len(b) > maxBodyKept {
		return 0, errBodyTooLarge
	}
	w.body = append(w.body, b...)
	return len(b), nil
}

// maxBodyKept bounds what a fast answer holds: a value's limit and a
// status page are far below it.
const maxBodyKept = 64 << 20

var errBodyTooLarge = errors.New("server: answer over the fast path's limit")

func bodyAllowed(status int) bool {
	return status >= 200 && status != http.StatusNoContent && status != http.StatusNotModified
}

// writeTo writes the answer as HTTP/1.1 to bw: the status line, the
// handler's headers, Date, a Content-Length the handler did not set, and
// the body.
func (w *fastResponse) writeTo(bw *bufio.Writer, now time.Time, closing bool) error {
	w.WriteHeader(http.StatusOK)
	b := bw.AvailableBuffer()
	b = append(b, "HTTP/1.1 "...)
	b = strconv.AppendInt(b, int64(w.status), 10)
	b = append(b, ' ')
	b = append(b, http.StatusText(w.status)...)
	b = append(b, "\r\n"...)
	for k, vs := range w.h {
		for _, v := range vs {
			b = append(b, k...)
			b = append(b, ": "...)
			b = appendFieldValue(b, v)
			b = append(b, "\r\n"...)
		}
	}
	if _, ok := w.h["Date"]; !ok {
		b = append(b, "Date: "...)
		b = append(b, httpDate(now)...)
		b = append(b, "\r\n"...)
	}
	if _, ok := w.h["Content-Length"]; !ok && bodyAllowed(w.status) {
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, int64(len(w.body)), 10)
		b = append(b, "\r\n"...)
	}
	if closing {
		b = append(b, "Connection: close\r\n"...)
	}
	b = append(b, "\r\n"...)
	if _, err := bw.Write(b); err != nil {
		return err
	}
	_, err := bw.Write(w.body)
	if cap(w.body) > fastBufSize {
		w.body = nil // a status page's body is not kept for every lookup after it
	}
	return err
}

// appendFieldValue appends v with CR and LF turned to spaces, as net/http
// writes header values.
func appendFieldValue(b []byte, v string) []byte {
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == '\r' || c == '\n' {
			c = ' '
		}
		b = append(b, c)
	}
	return b
}

// dateNow is the Date of the current second, formatted once.
var dateNow atomic.Pointer[dated]

type dated struct {
	sec int64
	s   string
}

func httpDate(now time.Time) string {
	sec := now.Unix()
	if d := dateNow.Load(); d != nil && d.sec == sec {
		return d.s
	}
	d := &dated{sec: sec, s: now.UTC().Format(http.TimeFormat)}
	dateNow.Store(d)
	return d.s
}
