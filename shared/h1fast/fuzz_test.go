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
// otherwise is a request the two answer differently.
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
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > bufSize {
			return
		}
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
