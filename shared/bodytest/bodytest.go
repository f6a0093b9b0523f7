package bodytest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// Probe wraps a handler and watches how far each request's body has been
// read. It is safe for concurrent use.
type Probe struct {
	h http.Handler

	mu    sync.Mutex // guards waits
	waits []*wait
}

type wait struct {
	n    int64
	once sync.Once
	ch   chan struct{}
}

// Wrap returns a Probe serving h.
func Wrap(h http.Handler) *Probe { return &Probe{h: h} }

// Asking returns a channel closed once the handler of some request has
// read n bytes of its body and asks for more: it is blocked on the
// client. Call it before the request is sent.
func (p *Probe) Asking(n int64) <-chan struct{} {
	w := &wait{n: n, ch: make(chan struct{})}
	p.mu.Lock()
	p.waits = append(p.waits, w)
	p.mu.Unlock()
	return w.ch
}

// ServeHTTP serves r with the wrapped handler, its body watched.
func (p *Probe) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r.Body = &watched{ReadCloser: r.Body, p: p}
	p.h.ServeHTTP(w, r)
}

type watched struct {
	io.ReadCloser
	p    *Probe
	read int64
}

func (b *watched) Read(buf []byte) (int, error) {
	b.p.mu.Lock()
	for _, w := range b.p.waits {
		if b.read >= w.n {
			w.once.Do(func() { close(w.ch) })
		}
	}
	b.p.mu.Unlock()
	n, err := b.ReadCloser.Read(buf)
	b.read += int64(n)
	return n, err
}

// Client is one raw connection to a server.
type Client struct {
	conn net.Conn
	r    *bufio.Reader
}

// Dial connects to addr (host:port).
func Dial(addr string) (*Client, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("bodytest: %w", err)
	}
	return &Client{conn: c, r: bufio.NewReader(c)}, nil
}

// Send writes raw bytes: a request head, part of a body, a chunk.
func (c *Client) Send(b []byte) error {
	if _, err := c.conn.Write(b); err != nil {
		return fmt.Errorf("bodytest: sending: %w", err)
	}
	return nil
}

// Post writes the head of a POST to path: with a Content-Length of
// length, or chunked when length is negative. The body is the caller's
// to send (Send, Chunk).
func (c *Client) Post(path string, length int64) error {
	head := "POST " + path + " HTTP/1.1\r\nHost: test\r\n"
	if length >= 0 {
		head += fmt.Sprintf("Content-Length: %d\r\n", length)
	} else {
		head += "Transfer-Encoding: chunked\r\n"
	}
	return c.Send([]byte(head + "\r\n"))
}

// Chunk writes b as one chunk of a chunked body.
func (c *Client) Chunk(b []byte) error {
	return c.Send(append(fmt.Appendf(nil, "%x\r\n", len(b)), append(b, "\r\n"...)...))
}

// Answer reads the response, waiting at most within; a server that does
// not answer in time is an error.
func (c *Client) Answer(within time.Duration) (*http.Response, error) {
	c.conn.SetReadDeadline(time.Now().Add(within))
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		return nil, fmt.Errorf("bodytest: reading the answer: %w", err)
	}
	_, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("bodytest: reading the answer's body: %w", err)
	}
	return resp, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }
