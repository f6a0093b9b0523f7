package h1fast

import (
	"bufio"
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"time"

	"go.uber.org/zap"

	"spangle/shared/wire"
)

// bufSize bounds a request's line and headers on the fast path; a longer
// one goes to net/http, whose own limit applies.
const bufSize = 4 << 10

// idleSlack: the idle deadline is moved at most this often, since each
// move costs a timer change; a connection is then closed after
// IdleTimeout - idleSlack to IdleTimeout of silence.
const idleSlack = 10 * time.Second

// conn is one connection served by the fast path; only its goroutine
// uses it.
type conn struct {
	c        net.Conn
	br       *bufio.Reader
	bw       *bufio.Writer
	deadline time.Time // the read deadline set; zero: none known
	answered time.Time // when the last answer was written; zero: none yet
	req      *http.Request
	w        response
	ps       *postState // made by the first POST the fast path takes
	// heldRead: a TLS connection whose client pipelines (a request was
	// read with another): before the answers held go out, the records
	// already received are read too (readReceived).
	heldRead bool
	// ro is a TLS connection's transport when it can read only what was
	// received (readReceived); nil otherwise.
	ro receivedOnly
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

func isTLS(c net.Conn) bool {
	_, ok := c.(*tls.Conn)
	return ok
}

func (s *Server) serve(nc net.Conn) {
	if tc, ok := nc.(*tls.Conn); ok && !s.handshake(tc) {
		// net/http handshakes again: it gets the same error (a
		// tls.Conn keeps it) and logs and answers it as it always
		// did, or serves the ALPN protocol.
		s.handoff.give(tc)
		return
	}
	c := &conn{c: nc, br: bufio.NewReaderSize(nc, bufSize), bw: bufio.NewWriterSize(nc, bufSize)}
	c.req = (&http.Request{Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: http.Header{}}).WithContext(s.base)
	c.w.h = http.Header{}
	handed := false
	defer func() {
		// A lookup that panics ends its connection, not the process,
		// as under net/http.
		if err := recover(); err != nil && err != http.ErrAbortHandler {
			s.opts.Log.Error("h1fast: panic serving a lookup", zap.String("remote", nc.RemoteAddr().String()),
				zap.Any("panic", err), zap.Stack("stack"))
		}
		s.forget(c)
		if !handed {
			c.bw.Flush() // answers held for pipelined requests
			nc.Close()
		}
	}()
	idle := s.opts.IdleTimeout
	tc, tlsConn := nc.(*tls.Conn)
	if tlsConn {
		c.ro, _ = tc.NetConn().(receivedOnly)
	}
	for {
		if c.br.Buffered() > 0 {
			// A pipelined request read with the last one: served
			// before the answers held so far are written (pipelined
			// answers go out in one write).
			c.heldRead = tlsConn
			if !s.setIdle(c, false) {
				return
			}
		} else {
			if c.heldRead && c.bw.Buffered() > 0 && c.readReceived() {
				continue // more requests came with the last read
			}
			// Nothing read ahead: the answers held go out before the
			// loop waits for the next request.
			if c.bw.Buffered() > 0 && c.bw.Flush() != nil {
				return
			}
			if !s.setIdle(c, true) {
				return
			}
			now := c.answered // the clock read for the last answer's Date
			if now.IsZero() {
				now = time.Now()
			}
			if c.deadline.Sub(now) < idle-idleSlack {
				c.deadline = now.Add(idle)
				if nc.SetReadDeadline(c.deadline) != nil {
					return
				}
			}
			if _, err := c.br.Peek(1); err != nil {
				return
			}
			if !s.setIdle(c, false) {
				return
			}
		}
		n, ok := c.readHead(s.opts.ReadHeaderTimeout)
		if !ok {
			return
		}
		head, _ := c.br.Peek(n) // buffered: no error
		rq, fast := parse(head)
		if !fast && s.opts.Post.Handle != nil {
			if pr, ok := c.parsePost(head, s.opts.Post.MaxBytes); ok {
				c.br.Discard(n)
				// Its handler may wait for the body: the answers
				// held go out first.
				if c.bw.Buffered() > 0 && c.bw.Flush() != nil {
					return
				}
				if !c.post(s, pr) {
					return
				}
				continue
			}
		}
		if !fast {
			// net/http answers after the answers held, which go
			// out first.
			if c.bw.Buffered() > 0 && c.bw.Flush() != nil {
				return
			}
			if nc.SetReadDeadline(time.Time{}) != nil {
				return
			}
			// net/http owns nc from here, and forgets it on its own
			// shutdown; this loop no longer counts it.
			handed = true
			s.handoff.give(&prefixConn{Conn: nc, br: c.br})
			return
		}
		c.br.Discard(n)
		if !c.answer(s, rq) {
			return
		}
	}
}

// aLongTimeAgo is a read deadline that has passed: a read then takes
// only what is already received.
var aLongTimeAgo = time.Unix(1, 0)

// readReceived reads into br what the TLS connection has received
// already, without waiting for the network, and reports whether bytes
// came. A TLS connection's Read returns one record's bytes at a time,
// though one read of the socket may have brought several: a client that
// writes its pipelined requests as they come (routerd) sends a record
// per write, and without this each record's answers would go out in a
// write of their own where a plaintext connection's one read gets them
// all and answers them in one. When the connection's transport can be
// told not to wait (receivedOnly: shared/tlsconfig's listeners make
// such connections), a read that would go to the network fails at once;
// otherwise a read deadline in the past does the same, at the price of
// two deadline changes. Either way the read fails without a system
// call after crypto/tls has taken any whole record it holds; the failure
// is temporary and the connection reads on.
func (c *conn) readReceived() bool {
	if c.ro != nil {
		c.ro.ReceivedOnly(true)
		_, err := c.br.Peek(1)
		c.ro.ReceivedOnly(false)
		return err == nil
	}
	if c.c.SetReadDeadline(aLongTimeAgo) != nil {
		return false
	}
	_, err := c.br.Peek(1)
	if c.c.SetReadDeadline(c.deadline) != nil {
		return false
	}
	return err == nil
}

// receivedOnly is a TLS connection's transport that can be told to fail
// reads at once rather than wait for the network, with a temporary
// net.Error (which crypto/tls does not keep), and then to wait again.
type receivedOnly interface {
	ReceivedOnly(on bool)
}

// handshake does tc's TLS handshake, bounded as net/http bounds it;
// false hands tc to net/http: the handshake failed, or it chose an ALPN
// protocol other than HTTP/1.1.
func (s *Server) handshake(tc *tls.Conn) bool {
	dl := time.Now().Add(s.opts.ReadHeaderTimeout)
	tc.SetDeadline(dl)
	if err := tc.HandshakeContext(s.base); err != nil {
		return false
	}
	if tc.SetDeadline(time.Time{}) != nil {
		return false
	}
	switch tc.ConnectionState().NegotiatedProtocol {
	case "", "http/1.1":
		return true
	}
	return false
}

// readHead waits until br holds a whole request head (through its empty
// line) and returns its length; or, when the head is longer than the
// buffer or its lines are not CRLF-ended, the bytes buffered, for
// net/http to read on. ok is false when the connection failed.
func (c *conn) readHead(timeout time.Duration) (n int, ok bool) {
	timed := false
	for {
		b, _ := c.br.Peek(c.br.Buffered())
		if end, done := headEnd(b); done {
			if timed {
				c.deadline = time.Time{} // re-armed before the next request
			}
			if end < 0 {
				return len(b), true
			}
			return end, true
		}
		if len(b) == bufSize {
			return len(b), true
		}
		if !timed {
			timed = true
			// The rest of the head may wait for the answers held.
			if c.bw.Buffered() > 0 && c.bw.Flush() != nil {
				return 0, false
			}
			if c.c.SetReadDeadline(time.Now().Add(timeout)) != nil {
				return 0, false
			}
		}
		if _, err := c.br.Peek(len(b) + 1); err != nil {
			return 0, false
		}
	}
}

// answerRoom: an answer is held only when the write buffer has this
// much room left; else the answers held go out first (an answer that
// does not fit goes out in pieces, and costs its buffer an allocation).
const answerRoom = 1 << 10

// answer serves one key lookup and writes its answer into the write
// buffer, where it is held while more requests are read ahead (the loop
// writes the answers held before it waits); false when the connection is
// to end.
func (c *conn) answer(s *Server, rq request) bool {
	r, w := c.req, &c.w
	r.Method = http.MethodGet
	if rq.head {
		r.Method = http.MethodHead
	}
	clear(r.Header)
	if rq.version != "" {
		r.Header[wire.HeaderVersion] = []string{rq.version}
	}
	w.reset(rq.head)
	s.opts.Lookup(w, r, rq.target)
	c.answered = time.Now()
	if c.bw.Available() < answerRoom && c.bw.Buffered() > 0 && c.bw.Flush() != nil {
		return false
	}
	if w.writeTo(c.bw, c.c, s.date.at(c.answered), rq.close) != nil {
		return false
	}
	if rq.close {
		c.bw.Flush()
		return false
	}
	return true
}

// tlsConnKey is the context key under which a TLS connection handed to
// net/http after its first request stays known to the handler.
type tlsConnKey struct{}

// tlsConnContext is http.Server.ConnContext: net/http sees a handed TLS
// connection as a prefixConn, not a *tls.Conn, and would leave
// Request.TLS nil.
func tlsConnContext(ctx context.Context, c net.Conn) context.Context {
	if pc, ok := c.(*prefixConn); ok {
		if tc, ok := pc.Conn.(*tls.Conn); ok {
			return context.WithValue(ctx, tlsConnKey{}, tc)
		}
	}
	return ctx
}

// withTLSState sets Request.TLS, as net/http sets it on a *tls.Conn of
// its own, on the requests of a TLS connection the fast path handed over.
func withTLSState(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil {
			if tc, ok := r.Context().Value(tlsConnKey{}).(*tls.Conn); ok {
				st := tc.ConnectionState()
				r = r.WithContext(r.Context())
				r.TLS = &st
			}
		}
		next.ServeHTTP(w, r)
	})
}
