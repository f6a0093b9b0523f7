package h1fast

import (
	"bytes"

	"spangle/shared/wire"
)

// request is what the fast path reads of a request head.
type request struct {
	head    bool
	target  wire.Target
	version string // the first X-Sequins-Version; "" if none
	close   bool   // Connection: close
}

// parse reads a request head; fast is false unless it is a GET or HEAD
// of a key (wire.ParsePath finds one), in HTTP/1.1, with one Host, no
// body and no header net/http would answer or act on differently.
// FuzzParse checks that net/http reads the same request from every head
// it takes.
func parse(b []byte) (rq request, fast bool) {
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
	// A bad path, a db's status page and storaged's peer endpoints
	// (/_elect/, /_partition/: no db name starts with "_") are
	// net/http's too.
	t, err := wire.ParsePath(string(target))
	if err != nil || !t.HasKey {
		return rq, false
	}
	rq.target = t
	return rq, true
}

// nextField cuts the next header line off rest: end is true at the
// empty line that ends the head; ok is false when the line is not a
// field net/http and this package read alike (no CRLF, which a head cut
// short by the buffer lacks: net/http's; a bad name or value).
func nextField(rest []byte) (name, value, after []byte, end, ok bool) {
	line, after, ok := bytes.Cut(rest, []byte("\r\n"))
	if !ok {
		return nil, nil, nil, false, false
	}
	if len(line) == 0 {
		return nil, nil, after, true, true
	}
	colon := bytes.IndexByte(line, ':')
	if colon <= 0 || !token(line[:colon]) {
		return nil, nil, nil, false, false
	}
	name, value = line[:colon], bytes.Trim(line[colon+1:], " \t")
	if !fieldValue(value) {
		return nil, nil, nil, false, false
	}
	return name, value, after, false, true
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
