package h1fasttest

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// RawConn is a client connection that writes requests byte for byte and
// reads answers with net/http's parser. Its methods fail the test on an
// error. It is not safe for concurrent use.
type RawConn struct {
	t  testing.TB
	c  net.Conn
	br *bufio.Reader
}

// Dial connects to addr over TCP; the connection is closed when the test
// ends.
func Dial(t testing.TB, addr string) *RawConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return New(t, c)
}

// New wraps c (a TLS connection, say) as Dial does: closed when the test
// ends, and with a 20-second deadline so that a server that stops
// answering fails the test rather than hanging it.
func New(t testing.TB, c net.Conn) *RawConn {
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(20 * time.Second))
	return &RawConn{t: t, c: c, br: bufio.NewReader(c)}
}

// Send writes s as it is: one request, several pipelined, or a piece of
// one.
func (rc *RawConn) Send(s string) {
	rc.t.Helper()
	if _, err := io.WriteString(rc.c, s); err != nil {
		rc.t.Fatal(err)
	}
}

// Read reads the next answer, to a request with method (a HEAD's answer
// has no body), and all of its body.
func (rc *RawConn) Read(method string) (*http.Response, string) {
	rc.t.Helper()
	resp, err := http.ReadResponse(rc.br, &http.Request{Method: method})
	if err != nil {
		rc.t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		rc.t.Fatal(err)
	}
	resp.Body.Close()
	return resp, string(b)
}

// Reader is the buffered reader Read parses from, for a test that reads
// the bytes themselves: EOF after the server closed, or an answer that
// is not HTTP/1.1.
func (rc *RawConn) Reader() *bufio.Reader { return rc.br }

// Close closes the connection before the test ends.
func (rc *RawConn) Close() error { return rc.c.Close() }

// Request writes out a request as a client would send it: the request
// line, Host, the headers hdr (name, value pairs, written as given, so a
// test can send odd cases and repeats), an empty line, and body as it is
// (hdr gives its Content-Length, if any).
func Request(method, target, host string, hdr []string, body string) string {
	req := method + " " + target + " HTTP/1.1\r\nHost: " + host + "\r\n"
	for i := 0; i+1 < len(hdr); i += 2 {
		req += hdr[i] + ": " + hdr[i+1] + "\r\n"
	}
	return req + "\r\n" + body
}
