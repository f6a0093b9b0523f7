package h1fast

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

// response is the http.ResponseWriter of the fast path: it holds the
// answer until the lookup returns, then writeTo sends it whole. It is
// reused for the connection's next request.
type response struct {
	h      http.Header
	status int // 0 until WriteHeader
	head   bool
	body   []byte
	headN  int // bytes a HEAD's lookup wrote, and net/http would drop
}

func (w *response) reset(head bool) {
	clear(w.h)
	w.status, w.head, w.body, w.headN = 0, head, w.body[:0], 0
}

func (w *response) Header() http.Header { return w.h }

func (w *response) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *response) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	if w.head {
		w.headN += len(b)
		return len(b), nil
	}
	if !bodyAllowed(w.status) {
		return len(b), nil
	}
	if len(w.body)+len(b) > maxBodyKept {
		return 0, errBodyTooLarge
	}
	w.body = append(w.body, b...)
	return len(b), nil
}

// maxBodyKept bounds what a fast answer holds: a value's limit is far
// below it.
const maxBodyKept = 64 << 20

var errBodyTooLarge = errors.New("h1fast: answer over the fast path's limit")

func bodyAllowed(status int) bool {
	return status >= 200 && status != http.StatusNoContent && status != http.StatusNotModified
}

// writeTo writes the answer as HTTP/1.1 to bw: the status line, the
// lookup's headers, Date, a Content-Length the lookup did not set, and
// the body (none for HEAD), as net/http would. Where net/http would
// chunk a body over its 2 KiB buffer, or leave out a HEAD's length for
// the same reason, this sends the length: the same answer, framed as a
// short one. An answer that does not fit in bw's buffer (a batch's) goes
// to nc in one write of head and body (writev on TCP) instead of a
// buffer's worth and then the rest: one system call, and the reader is
// woken once for the whole answer.
func (w *response) writeTo(bw *bufio.Writer, nc net.Conn, date string, closing bool) error {
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
		b = append(b, date...)
		b = append(b, "\r\n"...)
	}
	if _, ok := w.h["Content-Length"]; !ok && bodyAllowed(w.status) {
		// A HEAD whose lookup wrote nothing gets none, as from net/http.
		if n := len(w.body); !w.head || w.headN > 0 {
			if w.head {
				n = w.headN
			}
			b = append(b, "Content-Length: "...)
			b = strconv.AppendInt(b, int64(n), 10)
			b = append(b, "\r\n"...)
		}
	}
	if closing {
		b = append(b, "Connection: close\r\n"...)
	}
	b = append(b, "\r\n"...)
	var err error
	if len(w.body) > bw.Available()-len(b) && bw.Buffered() == 0 {
		// b lies in bw's free space, which nothing else uses meanwhile.
		bufs := net.Buffers{b, w.body}
		_, err = bufs.WriteTo(nc)
	} else if _, err = bw.Write(b); err == nil {
		_, err = bw.Write(w.body)
	}
	if cap(w.body) > bufSize {
		w.body = nil // a big value's buffer is not kept for every lookup after it
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

// dateCache is the Date of the current second, formatted once per
// second rather than per answer. It is safe for concurrent use.
type dateCache struct {
	p atomic.Pointer[dated]
}

type dated struct {
	sec int64
	s   string
}

func (d *dateCache) at(now time.Time) string {
	sec := now.Unix()
	if v := d.p.Load(); v != nil && v.sec == sec {
		return v.s
	}
	v := &dated{sec: sec, s: now.UTC().Format(http.TimeFormat)}
	d.p.Store(v)
	return v.s
}
