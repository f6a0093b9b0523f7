package load

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"
)

// conn is one keep-alive HTTP/1.1 connection. It is not safe for
// concurrent use.
type conn struct {
	addr string
	tls  *tls.Config // nil: plaintext
	c    net.Conn
	r    *bufio.Reader
	req  []byte
	// check, if set, reads each 200 answer's body into buf and judges
	// it; otherwise bodies are discarded unread.
	check func(body []byte) error
	buf   []byte
}

var (
	headerContentLength    = []byte("content-length:")
	headerTransferEncoding = []byte("transfer-encoding:")
	headerConnection       = []byte("connection:")
	tokenClose             = []byte("close")
)

// errStatus marks an answer that arrived but was not 200.
var errStatus = errors.New("load: status not 200")

func newConn(addr string, tlsCfg *tls.Config) *conn { return &conn{addr: addr, tls: tlsCfg} }

func (c *conn) close() {
	if c.c != nil {
		c.c.Close()
		c.c = nil
	}
}

// get sends GET path with keep-alive and reads the whole answer. A non-200
// answer returns an error matching errStatus and leaves the connection
// usable; any other error closes it (the next get redials).
func (c *conn) get(path []byte) error {
	if err := c.dial(); err != nil {
		return err
	}
	c.req = append(append(append(c.req[:0], "GET "...), path...), " HTTP/1.1\r\nHost: bench\r\n\r\n"...)
	return c.roundTrip()
}

// dial connects unless connected.
func (c *conn) dial() error {
	if c.c == nil {
		nc, err := net.DialTimeout("tcp", c.addr, 5*time.Second)
		if err != nil {
			return fmt.Errorf("load: dial %s: %w", c.addr, err)
		}
		if c.tls != nil {
			cfg := c.tls
			if cfg.ServerName == "" {
				// As net/http does: the name to verify is the host dialled.
				cfg = cfg.Clone()
				cfg.ServerName, _, _ = net.SplitHostPort(c.addr)
				c.tls = cfg
			}
			tc := tls.Client(nc, cfg)
			tc.SetDeadline(time.Now().Add(5 * time.Second))
			if err := tc.Handshake(); err != nil {
				nc.Close()
				return fmt.Errorf("load: TLS handshake with %s: %w", c.addr, err)
			}
			tc.SetDeadline(time.Time{})
			nc = tc
		}
		c.c = nc
		if c.r == nil {
			c.r = bufio.NewReaderSize(nc, 16<<10)
		} else {
			c.r.Reset(nc)
		}
	}
	return nil
}

// post sends POST path with body, as get does GET.
func (c *conn) post(path, body []byte) error {
	if err := c.dial(); err != nil {
		return err
	}
	c.req = append(append(append(c.req[:0], "POST "...), path...), " HTTP/1.1\r\nHost: bench\r\nContent-Length: "...)
	c.req = append(strconv.AppendInt(c.req, int64(len(body)), 10), "\r\n\r\n"...)
	c.req = append(c.req, body...)
	return c.roundTrip()
}

// roundTrip writes c.req and reads the answer.
func (c *conn) roundTrip() error {
	if _, err := c.c.Write(c.req); err != nil {
		c.close()
		return fmt.Errorf("load: write: %w", err)
	}
	code, closeAfter, err := c.readResponse()
	if err != nil {
		if !errors.Is(err, errStatus) || closeAfter {
			c.close() // a body judged bad was read whole: keep the rest
		}
		return err
	}
	if closeAfter {
		c.close()
	}
	if code != 200 {
		return fmt.Errorf("%w: %d", errStatus, code)
	}
	return nil
}

// readResponse reads one answer with a Content-Length body and discards
// the body.
func (c *conn) readResponse() (code int, closeAfter bool, err error) {
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		return 0, false, fmt.Errorf("load: status line: %w", err)
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return 0, false, fmt.Errorf("load: bad status line %q", line)
	}
	code, err = strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, false, fmt.Errorf("load: bad status line %q", line)
	}
	n := -1
	for {
		line, err = c.r.ReadSlice('\n')
		if err != nil {
			return 0, false, fmt.Errorf("load: header: %w", err)
		}
		if len(line) <= 2 {
			break
		}
		switch {
		case hasFold(line, headerContentLength):
			n, err = strconv.Atoi(string(bytes.TrimSpace(line[len(headerContentLength):])))
			if err != nil || n < 0 {
				return 0, false, fmt.Errorf("load: bad header %q", line)
			}
		case hasFold(line, headerTransferEncoding):
			return 0, false, fmt.Errorf("load: %q is not supported", bytes.TrimSpace(line))
		case hasFold(line, headerConnection):
			closeAfter = bytes.Contains(bytes.ToLower(line), tokenClose)
		}
	}
	if n < 0 {
		if code == 204 || code == 304 {
			n = 0
		} else {
			return 0, false, errors.New("load: answer without Content-Length")
		}
	}
	if c.check != nil && code == 200 {
		if cap(c.buf) < n {
			c.buf = make([]byte, n)
		}
		c.buf = c.buf[:n]
		if _, err := io.ReadFull(c.r, c.buf); err != nil {
			return 0, false, fmt.Errorf("load: body: %w", err)
		}
		if err := c.check(c.buf); err != nil {
			return code, closeAfter, fmt.Errorf("%w: %w", errStatus, err)
		}
		return code, closeAfter, nil
	}
	if _, err := c.r.Discard(n); err != nil {
		return 0, false, fmt.Errorf("load: body: %w", err)
	}
	return code, closeAfter, nil
}

func hasFold(line, prefix []byte) bool {
	return len(line) >= len(prefix) && bytes.EqualFold(line[:len(prefix)], prefix)
}
