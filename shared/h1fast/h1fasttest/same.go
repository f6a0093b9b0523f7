package h1fasttest

import (
	"net/http"
	"strings"
	"testing"
)

// SameAnswer checks that the fast path answered a request as net/http
// did: the same status, body, Content-Length and Connection: close, and
// the same headers as SameHeaders checks them. name says which request
// in the errors. A test that lets an answer differ (a replica's name,
// map order in a body) evens that out before the call.
func SameAnswer(t testing.TB, name string, fastResp *http.Response, fastBody string, netResp *http.Response, netBody string) {
	t.Helper()
	f, n := fastResp, netResp
	if f.StatusCode != n.StatusCode || fastBody != netBody || f.ContentLength != n.ContentLength || f.Close != n.Close {
		t.Errorf("%s: fast %d len %d %.80q close=%v; net/http %d len %d %.80q close=%v", name,
			f.StatusCode, f.ContentLength, fastBody, f.Close, n.StatusCode, n.ContentLength, netBody, n.Close)
	}
	SameHeaders(t, name, f.Header, n.Header)
}

// SameHeaders checks that the fast path sent a Date and, Date aside,
// every header net/http sent with the same values, and none that
// net/http did not send. It leaves both headers as they were.
func SameHeaders(t testing.TB, name string, fastHeader, netHeader http.Header) {
	t.Helper()
	if fastHeader.Get("Date") == "" {
		t.Errorf("%s: no Date", name)
	}
	fast, net := fastHeader.Clone(), netHeader.Clone()
	fast.Del("Date")
	net.Del("Date")
	for k := range net {
		if f, n := strings.Join(fast[k], ","), strings.Join(net[k], ","); f != n {
			t.Errorf("%s: %s %q, net/http %q", name, k, f, n)
		}
	}
	for k := range fast {
		if _, ok := net[k]; !ok {
			t.Errorf("%s: %s %q, which net/http does not send", name, k, fast[k])
		}
	}
}
