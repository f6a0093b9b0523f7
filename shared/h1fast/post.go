package h1fast

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"time"

	"spangle/shared/wire"
)

// Post answers a POST of /<db> the fast path took (Options.Post): a
// batch lookup. r is reused from one POST of a connection to the next,
// as a Lookup's is: its Method (POST), Host, RemoteAddr, Header (every
// header of the request but Host, under canonical names, as net/http
// keeps them), ContentLength and Body are set, and its Context
// (Options.Context's values, never cancelled); URL is nil: t is the
// parsed path. r.Body reads the body off the connection, at most
// ContentLength bytes; w's read deadline (http.ResponseController's
// SetReadDeadline) bounds that reading, as on net/http. w holds the
// answer until Post returns, then sends it whole. A Connection: close
// header set by Post ends the connection after the answer, and a body
// Post did not read to its end is read and dropped after Post returns,
// up to 256 KiB, as net/http does; past that, or when it fails, the
// connection ends. Post must not keep w, r or r.Body after it returns.
type Post func(w http.ResponseWriter, r *http.Request, t wire.Target)

// PostOptions are Options.Post: the POSTs the fast path takes, and
// their bound.
type PostOptions struct {
	// Handle answers them; nil leaves every POST to net/http.
	Handle Post
	// MaxBytes bounds the Content-Length of the POSTs taken (the
	// daemon's batch body limit); a larger one, or a body without
	// Content-Length (chunked) or with Expect, is net/http's, which
	// answers it as before. Default wire.DefaultBatchMaxBytes.
	MaxBytes int64
}

// maxDiscard is what is read and dropped of a body Post left unread
// before the next request on the connection: net/http's bound.
const maxDiscard = 256 << 10

// postRequest is what the fast path reads of a POST's head.
type postRequest struct {
	target wire.Target
	length int64
	close  bool
	host   []byte
	// fields is the head's header lines but Host, name then value,
	// slices of the head.
	fields [][]byte
}

// parsePost reads a POST head: ok is false unless it is a POST of /<db>
// (wire.ParsePath names a db and no key) in HTTP/1.1, with one Host,
// one Content-Length of at most max bytes, and no header net/http would
// answer or act on differently (Transfer-Encoding, Expect, Upgrade, a
// Connection other than close or keep-alive). FuzzParse checks that
// net/http reads the same request from every head it takes. fields is
// reused for rq.fields.
func parsePost(b []byte, max int64, fields [][]byte) (rq postRequest, ok bool) {
	line, rest, ok := bytes.Cut(b, []byte("\r\n"))
	if !ok || !bytes.HasPrefix(line, []byte("POST ")) {
		return rq, false
	}
	target, proto, ok := bytes.Cut(line[5:], []byte(" "))
	if !ok || string(proto) != "HTTP/1.1" || !plainPath(target) {
		return rq, false
	}
	hosts, lengths := 0, 0
	rq.fields = fields[:0]
	for {
		var name, value []byte
		var end bool
		if name, value, rest, end, ok = nextField(rest); !ok {
			return rq, false
		}
		if end {
			break
		}
		switch {
		case wire.EqualFoldASCII(name, "Host"):
			if hosts++; !hostValue(value) {
				return rq, false
			}
			rq.host = value
			continue
		case wire.EqualFoldASCII(name, "Connection"):
			switch {
			case wire.EqualFoldASCII(value, "close"):
				rq.close = true
			case !wire.EqualFoldASCII(value, "keep-alive"):
				return rq, false
			}
		case wire.EqualFoldASCII(name, "Content-Length"):
			n, ok := contentLength(value, max)
			if lengths++; !ok {
				return rq, false
			}
			rq.length = n
		case wire.EqualFoldASCII(name, "Transfer-Encoding"), wire.EqualFoldASCII(name, "Expect"), wire.EqualFoldASCII(name, "Upgrade"):
			return rq, false
		}
		rq.fields = append(rq.fields, name, value)
	}
	if hosts != 1 || lengths != 1 {
		return rq, false
	}
	t, err := wire.ParsePath(string(target))
	if err != nil || t.HasKey || t.DB == "" {
		return rq, false
	}
	rq.target = t
	return rq, true
}

// header adds rq's header fields to h as net/http reads them.
func (rq *postRequest) header(h http.Header) {
	for i := 0; i+1 < len(rq.fields); i += 2 {
		k := canonicalKey(rq.fields[i])
		h[k] = append(h[k], string(rq.fields[i+1]))
	}
}

// canonicalKey is http.CanonicalHeaderKey of a header name (a token);
// the names a batch's request usually carries are not made again per
// request.
func canonicalKey(name []byte) string {
	for _, k := range [...]string{"Accept", "Content-Length", "Content-Type", "User-Agent", "Accept-Encoding", wire.HeaderVersion} {
		if wire.EqualFoldASCII(name, k) {
			return k
		}
	}
	return http.CanonicalHeaderKey(string(name))
}

// contentLength reads a Content-Length of at most max (max >= 0): 1 to
// 19 digits, each checked against max before it is added, so that no
// value overflows.
func contentLength(v []byte, max int64) (int64, bool) {
	if len(v) == 0 || len(v) > 19 {
		return 0, false
	}
	var n int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := int64(c - '0')
		if n > (max-d)/10 { // n*10+d > max, found without overflowing
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

// postState is a connection's POST request, body and writer, made on its
// first POST and reused for the next.
type postState struct {
	req    *http.Request
	body   body
	w      *postResponse
	fields [][]byte
	buf    []byte // the last answer's body buffer, for the next
}

// maxPostKept bounds the answer buffer a connection keeps from one POST
// to the next: a 100-key answer of 100-byte values takes 16 KiB.
const maxPostKept = 256 << 10

// body is a POST's body as Post reads it: the next length bytes of the
// connection.
type body struct {
	c *conn
	n int64 // bytes left
}

func (b *body) Read(p []byte) (int, error) {
	if b.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.n {
		p = p[:b.n]
	}
	n, err := b.c.br.Read(p)
	b.n -= int64(n)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	if err == nil && b.n == 0 {
		err = io.EOF
	}
	return n, err
}

func (b *body) Close() error { return nil }

// postResponse is response with the connection's read deadline, which a
// POST's handler sets while it reads the body.
type postResponse struct {
	*response
	c *conn
}

// SetReadDeadline is http.ResponseController's: it sets the connection's
// read deadline; the loop sets its idle deadline again after the answer.
func (w *postResponse) SetReadDeadline(t time.Time) error {
	w.c.deadline = time.Time{}
	return w.c.c.SetReadDeadline(t)
}

// post serves one POST and writes its answer; false when the connection
// is to end.
func (c *conn) post(s *Server, rq postRequest) bool {
	if c.ps == nil {
		c.ps = &postState{}
		c.ps.req = (&http.Request{Method: http.MethodPost, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: http.Header{}, RemoteAddr: c.c.RemoteAddr().String()}).WithContext(s.base)
		c.ps.w = &postResponse{response: &c.w, c: c}
		c.ps.body.c = c
	}
	ps := c.ps
	r := ps.req
	clear(r.Header)
	rq.header(r.Header)
	ps.fields = rq.fields[:0]      // the head's bytes are gone once read on
	if r.Host != string(rq.host) { // the same from one request to the next
		r.Host = string(rq.host)
	}
	r.ContentLength = rq.length
	ps.body.n = rq.length
	r.Body = &ps.body
	kept := c.w.body // a lookup's buffer, back after the answer
	c.w.reset(false)
	c.w.body = ps.buf[:0]
	s.opts.Post.Handle(ps.w, r, rq.target)
	closing := rq.close
	if vs, ok := c.w.h["Connection"]; ok {
		for _, v := range vs {
			closing = closing || wire.EqualFoldASCII([]byte(v), "close")
		}
		delete(c.w.h, "Connection") // written once, below, if closing
	}
	if left := ps.body.n; left > 0 && !closing {
		if left >= maxDiscard {
			closing = true
		} else if _, err := io.CopyN(io.Discard, &ps.body, left); err != nil && !errors.Is(err, io.EOF) {
			closing = true
		}
	}
	c.answered = time.Now()
	buf := c.w.body
	err := c.w.writeTo(c.bw, c.c, s.date.at(c.answered), closing)
	if cap(buf) <= maxPostKept {
		ps.buf = buf[:0]
	}
	c.w.body = kept[:0]
	if err != nil || c.bw.Flush() != nil {
		return false
	}
	return !closing
}

// parsePost is parsePost with the connection's reused fields.
func (c *conn) parsePost(head []byte, max int64) (postRequest, bool) {
	var fields [][]byte
	if c.ps != nil {
		fields = c.ps.fields
	}
	return parsePost(head, max, fields)
}
