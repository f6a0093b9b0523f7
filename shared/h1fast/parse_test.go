package h1fast

import "testing"

// parse keeps on the fast path only what it answers as net/http would.
func TestParse(t *testing.T) {
	cases := []struct {
		head string
		fast bool
	}{
		{"GET /db/k HTTP/1.1\r\nHost: x\r\n\r\n", true},
		{"GET /db/k HTTP/1.1\r\nHost: x\r\nX-Pad: cut", false},
		{"GET /db/k HTTP/1.1", false},
		{"HEAD /db/k HTTP/1.1\r\nHost: x:80\r\n\r\n", true},
		{"GET /db/k HTTP/1.0\r\nHost: x\r\n\r\n", false},
		{"GET /db/k HTTP/1.1\r\n\r\n", false},
		{"GET /db/k HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n", false},
		{"GET /db/k?x=1 HTTP/1.1\r\nHost: x\r\n\r\n", false},
		{"GET http://x/db/k HTTP/1.1\r\nHost: x\r\n\r\n", false},
		{"GET / HTTP/1.1\r\nHost: x\r\n\r\n", false},
		{"GET /db HTTP/1.1\r\nHost: x\r\n\r\n", false},
		{"GET /db/ HTTP/1.1\r\nHost: x\r\n\r\n", false},
		{"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", false},
		{"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", false},
		// storaged's peer endpoints: no db name starts with "_".
		{"GET /_partition/db/v/0 HTTP/1.1\r\nHost: x\r\n\r\n", false},
		{"GET /_elect/x HTTP/1.1\r\nHost: x\r\n\r\n", false},
		{"GET /%5Felect/x HTTP/1.1\r\nHost: x\r\n\r\n", false},
		{"GET /db/k HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\n", false},
		{"GET /db/k HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", true},
		{"GET /db/k HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", false},
		{"GET /db/k HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n\r\n", false},
		{"GET /db/k HTTP/1.1\r\nHost: x\r\nConnection: upgrade\r\n\r\n", false},
		{"GET /db/k HTTP/1.1\r\nHost: x\r\nUpgrade: h2c\r\n\r\n", false},
		{"GET /db/k HTTP/1.1\r\nHost: x\r\nBad Name: 1\r\n\r\n", false},
		{"GET /db/k HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n", false},
		{"GET /db/k HTTP/1.1\r\nHost: x\r\nX: a\x01b\r\n\r\n", false},
		{"POST /db HTTP/1.1\r\nHost: x\r\n\r\n", false},
		{"PUT /db/k HTTP/1.1\r\nHost: x\r\n\r\n", false},
	}
	for _, tc := range cases {
		if _, fast := parse([]byte(tc.head)); fast != tc.fast {
			t.Errorf("%q: fast %v, want %v", tc.head, fast, tc.fast)
		}
	}
}

// parse reads the version, the key and Connection: close.
func TestParseFields(t *testing.T) {
	rq, fast := parse([]byte("HEAD /d-b/a%2Fb%20c HTTP/1.1\r\nhost: x\r\nx-sequins-version: v2\r\nX-Sequins-Version: v3\r\nConnection: Close\r\n\r\n"))
	if !fast || !rq.head || rq.version != "v2" || !rq.close || rq.target.DB != "d-b" || rq.target.KeyString != "a/b c" {
		t.Fatalf("parse: fast=%v %+v", fast, rq)
	}
}

func TestHeadEnd(t *testing.T) {
	cases := []struct {
		b    string
		end  int
		done bool
	}{
		{"GET / HTTP/1.1\r\n\r\n", 18, true},
		{"GET / HTTP/1.1\r\nHost: x\r\n\r\nGET", 27, true},
		{"GET / HTTP/1.1\r\nHost: x\r\n", 0, false},
		{"GET / HTTP/1.1\nHost: x\n\n", -1, true},
		{"", 0, false},
	}
	for _, tc := range cases {
		if end, done := headEnd([]byte(tc.b)); end != tc.end || done != tc.done {
			t.Errorf("headEnd(%q) = %d, %v; want %d, %v", tc.b, end, done, tc.end, tc.done)
		}
	}
}
