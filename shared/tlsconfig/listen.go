package tlsconfig

import (
	"bufio"
	"crypto/tls"
	"net"
	"sync"
	"time"
)

// Listen wraps l as the settings say: TLS with ServerConfig, or with
// accept_plaintext both TLS and plaintext, told apart by each
// connection's first byte (a TLS handshake record starts with 0x16, an
// HTTP request with a letter). A nil Source returns l.
func (s *Source) Listen(l net.Listener) net.Listener {
	switch {
	case s == nil:
		return l
	case s.settings.AcceptPlaintext:
		return newMixedListener(l, s.server)
	}
	return &tlsListener{Listener: l, cfg: s.server}
}

// tlsListener is tls.NewListener's listener, but each *tls.Conn it
// makes reads through a transport that can be told not to wait
// (receivedConn).
type tlsListener struct {
	net.Listener
	cfg *tls.Config
}

func (l *tlsListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return tls.Server(&receivedConn{Conn: c}, l.cfg), nil
}

// receivedConn is a TLS server connection's transport. A server loop
// that has answers to send (shared/h1fast, before it writes the answers
// to a client's pipelined requests) asks its *tls.Conn for the records
// already received; with ReceivedOnly(true), a read that would go to the
// network fails at once instead, with a temporary error, which
// crypto/tls does not keep (the connection reads on afterwards), so
// that only the records crypto/tls holds are read. The same can be had
// with a read deadline in the past, but at the price of two deadline
// changes (timer work in the runtime's poller) and the net package's
// error allocated per attempt. Only the connection's reading goroutine
// calls ReceivedOnly and Read.
type receivedConn struct {
	net.Conn
	receivedOnly bool
}

// ReceivedOnly makes reads fail at once (on) or wait for the network
// again (off).
func (c *receivedConn) ReceivedOnly(on bool) { c.receivedOnly = on }

func (c *receivedConn) Read(b []byte) (int, error) {
	if c.receivedOnly {
		return 0, notReceived{}
	}
	return c.Conn.Read(b)
}

// CloseWrite half-closes the TCP connection, as the connection under
// tls.NewListener's conns would.
func (c *receivedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// notReceived is the error of a read that would have waited: a
// temporary net.Error, as a read past its deadline is.
type notReceived struct{}

func (notReceived) Error() string   { return "tlsconfig: nothing received yet" }
func (notReceived) Timeout() bool   { return true }
func (notReceived) Temporary() bool { return true }

// sniffTimeout bounds how long a new connection may stay silent before
// its first byte; a client that says nothing is dropped.
const sniffTimeout = 10 * time.Second

// tlsRecordHandshake is the first byte of every TLS client hello.
const tlsRecordHandshake = 0x16

// mixedListener hands out TLS and plaintext connections from one port.
// Connections are sniffed in goroutines of their own, so that a silent
// client never holds up Accept. It is safe for concurrent use.
type mixedListener struct {
	net.Listener
	cfg   *tls.Config
	conns chan net.Conn
	done  chan struct{} // closed by Close

	closeOnce sync.Once
	failOnce  sync.Once
	failed    chan struct{} // closed when the inner Accept failed for good
	err       error         // set before failed closes
}

func newMixedListener(l net.Listener, cfg *tls.Config) *mixedListener {
	m := &mixedListener{Listener: l, cfg: cfg, conns: make(chan net.Conn),
		done: make(chan struct{}), failed: make(chan struct{})}
	go m.loop()
	return m
}

func (m *mixedListener) loop() {
	for {
		c, err := m.Listener.Accept()
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				continue
			}
			m.failOnce.Do(func() { m.err = err; close(m.failed) })
			return
		}
		go m.sniff(c)
	}
}

func (m *mixedListener) sniff(c net.Conn) {
	c.SetReadDeadline(time.Now().Add(sniffTimeout))
	br := bufio.NewReader(c)
	first, err := br.Peek(1)
	c.SetReadDeadline(time.Time{})
	if err != nil {
		c.Close()
		return
	}
	var out net.Conn = &peekedConn{Conn: c, r: br}
	if first[0] == tlsRecordHandshake {
		out = tls.Server(&receivedConn{Conn: out}, m.cfg)
	}
	select {
	case m.conns <- out:
	case <-m.done:
		out.Close()
	}
}

// Accept returns the next sniffed connection: a *tls.Conn for TLS (so
// that net/http sees the handshake), the plain connection otherwise.
func (m *mixedListener) Accept() (net.Conn, error) {
	select {
	case c := <-m.conns:
		return c, nil
	case <-m.done:
		return nil, net.ErrClosed
	case <-m.failed:
		return nil, m.err
	}
}

// Close stops accepting; connections being sniffed are closed.
func (m *mixedListener) Close() error {
	m.closeOnce.Do(func() { close(m.done) })
	return m.Listener.Close()
}

// peekedConn reads through the buffer that holds the sniffed byte.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (p *peekedConn) Read(b []byte) (int, error) { return p.r.Read(b) }
