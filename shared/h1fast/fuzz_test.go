package h1fast

import (
	"bufio"
	"bytes"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"spangle/shared/wire"
)

// FuzzParse: whatever head the fast path takes, net/http reads the
// same request from it: a GET or HEAD in HTTP/1.1 with no body, the same
// key, the same first X-Sequins-Version and the same Connection: close.
// It never takes a path that storaged routes to a peer endpoint
// (/_elect/, /_partition/, matched on the unescaped path).
// Anything the fast path takes and net/http would refuse or read
// otherwise is a request the two answer differently. POST heads are
// checked the same way (checkPost).
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"GET /db/k HTTP/1.1\r\nHost: x\r\n\r\n",
		"HEAD /db/k HTTP/1.1\r\nHost: x:80\r\nConnection: close\r\n\r\n",
		"GET /db/a%2Fb HTTP/1.1\r\nHost: x\r\nX-Sequins-Version: v2\r\nX-Sequins-Version: v3\r\n\r\n",
		"GET /db/k HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: keep-alive\r\n\r\nGET /db/k2 HTTP/1.1\r\n",
		"GET /db/k HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
		"GET /db/k HTTP/1.1\r\nhost: x\r\n\tfolded\r\n\r\n",
		"GET /db/k HTTP/1.1\nHost: x\n\n",
		"GET /db/k?x=1 HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /%5Fpartition/db/v/0 HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /d%62/%5Felect HTTP/1.1\r\nHost: x\r\n\r\n",
		"POST /db HTTP/1.1\r\nHost: x\r\nContent-Length: 6\r\n\r\nk1\nk2\n",
		"POST /db HTTP/1.1\r\nHost: r:8080\r\nAccept: application/x-spangle-batch\r\nX-Sequins-Version: v1\r\ncontent-length: 0\r\nConnection: close\r\n\r\n",
		"POST /db HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nk1\n",
		"POST /db HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n",
		"POST /db HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
		"POST /db HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n",
		"POST /db HTTP/1.1\r\nHost: x\r\nContent-Length: +3\r\n\r\n",
		"POST /_elect/db HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
		"POST /%5Fpartition HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
		"POST /db/k HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
		"POST /db HTTP/1.1\r\nHost: x\r\nX-A: 1\r\nx-a:  2 \r\nContent-Length: 0\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > bufSize {
			return
		}
		checkPost(t, b)
		rq, fast := parse(b)
		if !fast {
			return
		}
		req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(b)))
		if err != nil {
			t.Fatalf("fast path took %q; net/http refuses it: %v", b, err)
		}
		wantMethod := http.MethodGet
		if rq.head {
			wantMethod = http.MethodHead
		}
		switch {
		case req.Method != wantMethod:
			t.Fatalf("%q: method %s, fast path read head=%v", b, req.Method, rq.head)
		case req.ProtoMajor != 1 || req.ProtoMinor != 1:
			t.Fatalf("%q: net/http reads %s", b, req.Proto)
		case req.ContentLength != 0 || len(req.TransferEncoding) != 0:
			t.Fatalf("%q: net/http reads a body (length %d, encoding %v)", b, req.ContentLength, req.TransferEncoding)
		case req.Close != rq.close:
			t.Fatalf("%q: net/http reads close=%v, fast path %v", b, req.Close, rq.close)
		case req.Header.Get(wire.HeaderVersion) != rq.version:
			t.Fatalf("%q: version %q, fast path %q", b, req.Header.Get(wire.HeaderVersion), rq.version)
		case req.URL.RawQuery != "":
			t.Fatalf("%q: the fast path took a query", b)
		case strings.HasPrefix(req.URL.Path, "/_"):
			t.Fatalf("%q: the fast path took %q, a peer endpoint's path in storaged", b, req.URL.Path)
		}
		want, err := wire.ParsePath(req.URL.EscapedPath())
		if err != nil {
			t.Fatalf("%q: net/http's path %q does not parse: %v", b, req.URL.EscapedPath(), err)
		}
		if !reflect.DeepEqual(want, rq.target) {
			t.Fatalf("%q: target %+v, net/http's path gives %+v", b, rq.target, want)
		}
	})
}

// checkPost: whatever POST head the fast path takes, net/http reads the
// same request from it: a POST in HTTP/1.1 of the same db, with the
// same Content-Length (at most the bound), no other framing, the same
// Host, headers and Connection: close.
func checkPost(t *testing.T, b []byte) {
	const max = 1 << 20
	rq, ok := parsePost(b, max, nil)
	if !ok {
		return
	}
	req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(b)))
	if err != nil {
		t.Fatalf("fast path took POST %q; net/http refuses it: %v", b, err)
	}
	h := http.Header{}
	rq.header(h)
	switch {
	case req.Method != http.MethodPost:
		t.Fatalf("%q: method %s, fast path read POST", b, req.Method)
	case req.ProtoMajor != 1 || req.ProtoMinor != 1:
		t.Fatalf("%q: net/http reads %s", b, req.Proto)
	case req.ContentLength != rq.length || rq.length < 0 || rq.length > max || len(req.TransferEncoding) != 0:
		t.Fatalf("%q: net/http reads length %d (encoding %v), fast path %d", b, req.ContentLength, req.TransferEncoding, rq.length)
	case req.Close != rq.close:
		t.Fatalf("%q: net/http reads close=%v, fast path %v", b, req.Close, rq.close)
	case req.Host != string(rq.host):
		t.Fatalf("%q: host %q, fast path %q", b, req.Host, rq.host)
	case !reflect.DeepEqual(req.Header, h):
		t.Fatalf("%q: headers %v, fast path %v", b, req.Header, h)
	case req.Header.Get("Expect") != "":
		t.Fatalf("%q: the fast path took an Expect", b)
	case req.URL.RawQuery != "":
		t.Fatalf("%q: the fast path took a query", b)
	case strings.HasPrefix(req.URL.Path, "/_"):
		t.Fatalf("%q: the fast path took %q, a peer endpoint's path in storaged", b, req.URL.Path)
	}
	want, err := wire.ParsePath(req.URL.EscapedPath())
	if err != nil || want.HasKey {
		t.Fatalf("%q: net/http's path %q is no db's: %+v, %v", b, req.URL.EscapedPath(), want, err)
	}
	if !reflect.DeepEqual(want, rq.target) {
		t.Fatalf("%q: target %+v, net/http's path gives %+v", b, rq.target, want)
	}
}
