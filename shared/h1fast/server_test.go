package h1fast

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"spangle/shared/h1fast/h1fasttest"
	"spangle/shared/tlstest"
	"spangle/shared/wire"
)

// testLookup answers as a daemon's lookup would: a value with its
// version, a 404 with a text body, a long value without Content-Length,
// a slow one.
func testLookup(w http.ResponseWriter, r *http.Request, t wire.Target) {
	h := w.Header()
	version := "v1"
	if vs := r.Header[wire.HeaderVersion]; len(vs) > 0 {
		version = vs[0]
	}
	h[wire.HeaderVersion] = []string{version}
	switch t.KeyString {
	case "missing":
		h["Content-Type"] = []string{"text/plain; charset=utf-8"}
		h["X-Content-Type-Options"] = []string{"nosniff"}
		h["Content-Length"] = []string{"12"}
		w.WriteHeader(http.StatusNotFound)
		if r.Method != http.MethodHead {
			io.WriteString(w, "key missing\n")
		}
		return
	case "gone":
		h["Retry-After"] = []string{"1"}
		w.WriteHeader(wire.StatusVersionGone)
		return
	case "big":
		h["Content-Type"] = []string{"application/octet-stream"}
		w.Write([]byte(strings.Repeat("b", 3*bufSize)))
		return
	case "slow":
		time.Sleep(300 * time.Millisecond)
	case "panic":
		panic("lookup of a key that panics")
	}
	h["Content-Type"] = []string{"application/octet-stream"}
	h["Last-Modified"] = []string{"Mon, 02 Jan 2006 15:04:05 GMT"}
	io.WriteString(w, "v:"+t.KeyString)
}

// testFallback answers on net/http: a key lookup as testLookup does,
// anything else with what it saw; every answer says net/http served it.
func testFallback(w http.ResponseWriter, r *http.Request) {
	w.Header()["X-Served-By"] = []string{"net/http"}
	if t, err := wire.ParsePath(r.URL.EscapedPath()); err == nil && t.HasKey && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		testLookup(w, r, t)
		return
	}
	peer := "none"
	if r.TLS != nil {
		peer = "tls"
		if len(r.TLS.PeerCertificates) > 0 {
			peer = r.TLS.PeerCertificates[0].Subject.CommonName
		}
	}
	io.WriteString(w, "fallback "+r.Method+" "+r.URL.Path+" peer="+peer)
}

type testServer struct {
	s       *Server
	addr    string
	lookups atomic.Int64
	served  chan error
}

// start serves on a local listener, wrapped by wrap if not nil, until
// the test ends.
func start(t *testing.T, opts Options, wrap func(net.Listener) net.Listener) *testServer {
	t.Helper()
	ts := &testServer{served: make(chan error, 1)}
	opts.Lookup = func(w http.ResponseWriter, r *http.Request, tg wire.Target) {
		ts.lookups.Add(1)
		testLookup(w, r, tg)
	}
	if opts.Fallback == nil {
		opts.Fallback = http.HandlerFunc(testFallback)
	}
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts.s, ts.addr = s, l.Addr().String()
	if wrap != nil {
		l = wrap(l)
	}
	go func() { ts.served <- s.Serve(l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-ts.served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v, want http.ErrServerClosed", err)
		}
	})
	return ts
}

// The fast path answers what a lookup writes as net/http answers it:
// the same status, headers (Date aside) and body, for values, errors,
// HEADs and bodies without a Content-Length.
func TestAnswersAsNetHTTP(t *testing.T) {
	ts := start(t, Options{}, nil)
	fast := h1fasttest.Dial(t, ts.addr)
	slow := h1fasttest.Dial(t, ts.addr)
	slow.Send("GET /db/ HTTP/1.1\r\nHost: x\r\n\r\n") // net/http's from here on
	if resp, body := slow.Read("GET"); !strings.HasPrefix(body, "fallback GET /db/") {
		t.Fatalf("status page: %d %q", resp.StatusCode, body)
	}
	cases := []struct{ method, target, hdr string }{
		{"GET", "/db/k1", ""},
		{"HEAD", "/db/k1", ""},
		{"GET", "/db/a%2Fb%20c", ""},
		{"GET", "/db/k1", "X-Sequins-Version: v7\r\n"},
		{"GET", "/db/k1", "x-sequins-version: v7\r\nX-Sequins-Version: v8\r\n"},
		{"GET", "/db/missing", ""},
		{"HEAD", "/db/missing", ""},
		{"GET", "/db/gone", ""},
		{"HEAD", "/db/gone", ""},
		{"GET", "/db/big", ""},
		{"HEAD", "/db/big", ""},
	}
	for _, tc := range cases {
		req := tc.method + " " + tc.target + " HTTP/1.1\r\nHost: x\r\n" + tc.hdr + "\r\n"
		before := ts.lookups.Load()
		fast.Send(req)
		got, gotBody := fast.Read(tc.method)
		if ts.lookups.Load() != before+1 || got.Header.Get("X-Served-By") != "" {
			t.Fatalf("%q was not served on the fast path", req)
		}
		slow.Send(req)
		want, wantBody := slow.Read(tc.method)
		if want.Header.Get("X-Served-By") == "" {
			t.Fatalf("%q was not served by net/http", req)
		}
		want.Header.Del("X-Served-By")
		name := strings.TrimSpace(tc.method + " " + tc.target + " " + tc.hdr)
		if want.ContentLength < 0 && got.ContentLength > 0 {
			// net/http chunked a body over its buffer (or left a HEAD's
			// length out for that reason); the fast path sends the
			// length a GET's body has.
			want.ContentLength = got.ContentLength
			want.Header["Content-Length"] = got.Header["Content-Length"]
			if tc.method == "GET" && int64(len(gotBody)) != got.ContentLength {
				t.Errorf("%s: Content-Length %d of a %d-byte body", name, got.ContentLength, len(gotBody))
			}
		}
		h1fasttest.SameAnswer(t, name, got, gotBody, want, wantBody)
	}
}

// Pipelined requests, a head that arrives in pieces, and Connection:
// close are served on the fast path; a request net/http would judge
// otherwise (bare LF line ends, a head over the buffer, a POST) is
// net/http's, with the rest of its connection.
func TestConnections(t *testing.T) {
	ts := start(t, Options{}, nil)

	rc := h1fasttest.Dial(t, ts.addr)
	rc.Send("GET /db/a HTTP/1.1\r\nHost: x\r\n\r\nHEAD /db/b HTTP/1.1\r\nHost: x\r\n\r\nGET /db/c HTTP/1.1\r\nHost: x\r\n\r\n")
	for _, want := range []struct{ method, body string }{{"GET", "v:a"}, {"HEAD", ""}, {"GET", "v:c"}} {
		if resp, body := rc.Read(want.method); resp.StatusCode != 200 || body != want.body {
			t.Fatalf("pipelined %s: %d %q, want %q", want.method, resp.StatusCode, body, want.body)
		}
	}
	if n := ts.lookups.Load(); n != 3 {
		t.Fatalf("%d lookups on the fast path, want 3", n)
	}

	rc.Send("GET /db/sl")
	time.Sleep(50 * time.Millisecond)
	rc.Send("ow HTTP/1.1\r\nHo")
	time.Sleep(50 * time.Millisecond)
	rc.Send("st: x\r\n\r\n")
	if resp, body := rc.Read("GET"); resp.StatusCode != 200 || body != "v:slow" || resp.Header.Get("X-Served-By") != "" {
		t.Fatalf("head in pieces: %d %q %v", resp.StatusCode, body, resp.Header)
	}

	rc.Send("GET /db/last HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	resp, body := rc.Read("GET")
	if resp.StatusCode != 200 || body != "v:last" || !resp.Close {
		t.Fatalf("Connection: close: %d %q close=%v", resp.StatusCode, body, resp.Close)
	}
	if n, err := rc.Reader().ReadByte(); err != io.EOF {
		t.Fatalf("after Connection: close: read %v, %v; want EOF", n, err)
	}

	lf := h1fasttest.Dial(t, ts.addr)
	lf.Send("GET /db/lf HTTP/1.1\nHost: x\n\n")
	if resp, body := lf.Read("GET"); resp.StatusCode != 200 || body != "v:lf" || resp.Header.Get("X-Served-By") == "" {
		t.Fatalf("bare LF: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	big := h1fasttest.Dial(t, ts.addr)
	big.Send("GET /db/big1 HTTP/1.1\r\nHost: x\r\nX-Pad: " + strings.Repeat("p", 2*bufSize) + "\r\n\r\n")
	big.Send("GET /db/after HTTP/1.1\r\nHost: x\r\n\r\n")
	for _, want := range []string{"v:big1", "v:after"} {
		if resp, body := big.Read("GET"); resp.StatusCode != 200 || body != want || resp.Header.Get("X-Served-By") == "" {
			t.Fatalf("head over the fast path's buffer, then another: %d %q, want %q from net/http", resp.StatusCode, body, want)
		}
	}
	// A lookup that panics ends its connection, not the server.
	boom := h1fasttest.Dial(t, ts.addr)
	boom.Send("GET /db/panic HTTP/1.1\r\nHost: x\r\n\r\n")
	if b, err := io.ReadAll(boom.Reader()); len(b) != 0 || err != nil {
		t.Fatalf("a lookup that panicked: read %q, %v; want the connection closed", b, err)
	}
	post := h1fasttest.Dial(t, ts.addr)
	post.Send("GET /db/k HTTP/1.1\r\nHost: x\r\n\r\nPOST /db HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nk1\n")
	post.Read("GET")
	if resp, body := post.Read("POST"); resp.StatusCode != 200 || body != "fallback POST /db peer=none" {
		t.Fatalf("POST after a lookup: %d %q", resp.StatusCode, body)
	}
}

// Shutdown closes idle connections, lets a lookup under way finish and
// be answered, then closes its connection; Serve returns
// http.ErrServerClosed.
func TestShutdownFinishesLookups(t *testing.T) {
	s, err := New(Options{Lookup: testLookup, Fallback: http.HandlerFunc(testFallback)})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(l) }()
	idle := h1fasttest.Dial(t, l.Addr().String())
	idle.Send("GET /db/k HTTP/1.1\r\nHost: x\r\n\r\n")
	idle.Read("GET")
	busy := h1fasttest.Dial(t, l.Addr().String())
	busy.Send("GET /db/slow HTTP/1.1\r\nHost: x\r\n\r\n")
	time.Sleep(100 * time.Millisecond) // the lookup is under way
	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(context.Background()) }()
	if _, err := idle.Reader().ReadByte(); err != io.EOF {
		t.Fatalf("idle connection at shutdown: %v, want EOF", err)
	}
	if resp, body := busy.Read("GET"); resp.StatusCode != 200 || body != "v:slow" {
		t.Fatalf("lookup under way at shutdown: %d %q", resp.StatusCode, body)
	}
	if _, err := busy.Reader().ReadByte(); err != io.EOF {
		t.Fatalf("connection after shutdown: %v, want EOF", err)
	}
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		t.Fatalf("Serve: %v, want http.ErrServerClosed", err)
	}
	if c, err := net.Dial("tcp", l.Addr().String()); err == nil {
		c.Close()
		t.Fatal("the listener still accepts after Shutdown")
	}
}

// Shutdown before Serve: Serve returns at once and closes its listener.
func TestShutdownBeforeServe(t *testing.T) {
	s, err := New(Options{Lookup: testLookup, Fallback: http.HandlerFunc(testFallback)})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		t.Fatalf("Serve after Shutdown: %v", err)
	}
	if _, err := l.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("listener after Serve: %v, want closed", err)
	}
}

// tlsConfigs are a server's config (client certificates required) and a
// client's (with the peer certificate) from tlstest's files.
func tlsConfigs(t testing.TB) (server, client *tls.Config) {
	t.Helper()
	set := tlstest.New(t)
	cert, err := tls.LoadX509KeyPair(set.CertFile, set.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(set.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		t.Fatal("no CA certificate")
	}
	server = &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	client = &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, ServerName: "127.0.0.1"}
	return server, client
}

// With Options.TLS, key lookups on a TLS connection are served on the
// fast path; a request handed over later still shows net/http's handler
// the connection's TLS state (the client certificate a peer endpoint
// checks); plaintext to the TLS port gets net/http's 400 as before.
// Without it, TLS connections are net/http's whole.
func TestTLS(t *testing.T) {
	scfg, ccfg := tlsConfigs(t)
	wrap := func(l net.Listener) net.Listener { return tls.NewListener(l, scfg) }
	for _, on := range []bool{true, false} {
		ts := start(t, Options{TLS: on}, wrap)
		c, err := tls.Dial("tcp", ts.addr, ccfg)
		if err != nil {
			t.Fatal(err)
		}
		rc := h1fasttest.New(t, c)
		rc.Send("GET /db/k HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, body := rc.Read("GET")
		if resp.StatusCode != 200 || body != "v:k" {
			t.Fatalf("TLS=%v: lookup over TLS: %d %q", on, resp.StatusCode, body)
		}
		if fast := ts.lookups.Load() == 1; fast != on {
			t.Fatalf("TLS=%v: lookup served on the fast path: %v", on, fast)
		}
		rc.Send("GET /_partition/db HTTP/1.1\r\nHost: x\r\n\r\n")
		if _, body := rc.Read("GET"); !strings.HasPrefix(body, "fallback GET /_partition/db peer=") || strings.HasSuffix(body, "peer=none") || strings.HasSuffix(body, "peer=tls") {
			t.Fatalf("TLS=%v: peer endpoint after a lookup: %q, want the client certificate", on, body)
		}

		plain := h1fasttest.Dial(t, ts.addr)
		plain.Send("GET /db/k HTTP/1.1\r\nHost: x\r\n\r\n")
		b, _ := io.ReadAll(plain.Reader())
		if !strings.Contains(string(b), "400 Bad Request") || !strings.Contains(string(b), "HTTP request to an HTTPS server") {
			t.Fatalf("TLS=%v: plaintext to the TLS port: %q", on, b)
		}
	}
}

// writeCounting counts the writes on the connections it accepts.
type writeCounting struct {
	net.Listener
	writes *atomic.Int64
}

func (l writeCounting) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countedConn{Conn: c, writes: l.writes}, nil
}

type countedConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c *countedConn) Write(b []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(b)
}

// Over TLS, a record holds what the client wrote at once; a client
// that pipelines writes a record per burst, and the records one read of
// the socket brings are answered together, in one write, as a plaintext
// connection's one read would be. Over a transport that can read only
// what was received (the connections shared/tlsconfig's listeners make)
// no read deadline moves for it; over any other a past deadline does the
// same. Either way the connection reads on after a read that found
// nothing received.
func TestTLSRecordsReadTogetherAnsweredTogether(t *testing.T) {
	scfg, ccfg := tlsConfigs(t)
	for _, tc := range []struct {
		name string
		// listen wraps the test's listener, counting writes (and the
		// read deadline changes, when it can).
		listen func(l net.Listener, writes, deadlines *atomic.Int64) net.Listener
		// deadlines is how many read deadline changes reading the
		// records received may make; -1 when not counted.
		deadlines int64
	}{
		{"past deadline", func(l net.Listener, writes, _ *atomic.Int64) net.Listener {
			return tls.NewListener(writeCounting{Listener: l, writes: writes}, scfg)
		}, -1},
		{"received only", func(l net.Listener, writes, deadlines *atomic.Int64) net.Listener {
			return receivedOnlyListener{Listener: writeCounting{Listener: l, writes: writes}, cfg: scfg, deadlines: deadlines}
		}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			writes, deadlines := new(atomic.Int64), new(atomic.Int64)
			ts := start(t, Options{TLS: true}, func(l net.Listener) net.Listener { return tc.listen(l, writes, deadlines) })
			c, err := tls.Dial("tcp", ts.addr, ccfg)
			if err != nil {
				t.Fatal(err)
			}
			rc := h1fasttest.New(t, c)
			rc.Send("GET /db/a HTTP/1.1\r\nHost: x\r\n\r\nGET /db/b HTTP/1.1\r\nHost: x\r\n\r\n") // one record: a client that pipelines
			for _, k := range []string{"a", "b"} {
				if resp, body := rc.Read("GET"); resp.StatusCode != 200 || body != "v:"+k {
					t.Fatalf("GET %s: %d %q", k, resp.StatusCode, body)
				}
			}
			writes.Store(0)
			deadlines.Store(0)
			rc.Send("GET /db/slow HTTP/1.1\r\nHost: x\r\n\r\n")
			waitLookups(t, ts, 3) // the slow lookup under way: the next two records arrive meanwhile
			rc.Send("GET /db/c HTTP/1.1\r\nHost: x\r\n\r\n")
			rc.Send("GET /db/d HTTP/1.1\r\nHost: x\r\n\r\n")
			for _, k := range []string{"slow", "c", "d"} {
				if resp, body := rc.Read("GET"); resp.StatusCode != 200 || body != "v:"+k {
					t.Fatalf("GET %s: %d %q", k, resp.StatusCode, body)
				}
			}
			if n := writes.Load(); n != 2 {
				t.Fatalf("%d writes, want 2: the slow lookup's answer, then the two records read at once answered in one", n)
			}
			if n := deadlines.Load(); tc.deadlines >= 0 && n != tc.deadlines {
				t.Fatalf("%d read deadline changes while reading what was received, want %d", n, tc.deadlines)
			}
			rc.Send("GET /db/e HTTP/1.1\r\nHost: x\r\n\r\n")
			if resp, body := rc.Read("GET"); resp.StatusCode != 200 || body != "v:e" {
				t.Fatalf("GET e: %d %q", resp.StatusCode, body)
			}
		})
	}
}

// receivedOnlyListener makes TLS connections whose transport can read
// only what was received, as shared/tlsconfig's do, and counts the read
// deadlines set on them.
type receivedOnlyListener struct {
	net.Listener
	cfg       *tls.Config
	deadlines *atomic.Int64
}

func (l receivedOnlyListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return tls.Server(&receivedOnlyConn{Conn: c, deadlines: l.deadlines}, l.cfg), nil
}

type receivedOnlyConn struct {
	net.Conn
	deadlines *atomic.Int64
	only      bool
}

func (c *receivedOnlyConn) ReceivedOnly(on bool) { c.only = on }

func (c *receivedOnlyConn) Read(b []byte) (int, error) {
	if c.only {
		return 0, os.ErrDeadlineExceeded // a temporary net.Error, as a past deadline gives
	}
	return c.Conn.Read(b)
}

func (c *receivedOnlyConn) SetReadDeadline(t time.Time) error {
	c.deadlines.Add(1)
	return c.Conn.SetReadDeadline(t)
}

func (c *receivedOnlyConn) SetDeadline(t time.Time) error {
	c.deadlines.Add(1)
	return c.Conn.SetDeadline(t)
}

// waitLookups waits until ts's fast path has begun n lookups.
func waitLookups(t *testing.T, ts *testServer, n int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for ts.lookups.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("waited 5 s for lookup %d", n)
		}
		time.Sleep(time.Millisecond)
	}
}

// Pipelined requests read together are answered in order with one
// write; answers are held only while the next request is already read:
// a request whose head has not all come yet does not hold up the answers
// before it, nor does one net/http answers.
func TestPipelinedAnswersInOneWrite(t *testing.T) {
	writes := new(atomic.Int64)
	ts := start(t, Options{}, func(l net.Listener) net.Listener { return writeCounting{Listener: l, writes: writes} })
	nc, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	rc := h1fasttest.New(t, nc)
	nc.SetDeadline(time.Now().Add(5 * time.Second)) // an answer held fails the test, not hangs it
	rc.Send("GET /db/a HTTP/1.1\r\nHost: x\r\n\r\nGET /db/missing HTTP/1.1\r\nHost: x\r\n\r\nHEAD /db/b HTTP/1.1\r\nHost: x\r\n\r\nGET /db/c HTTP/1.1\r\nHost: x\r\n\r\n")
	for _, want := range []struct {
		method string
		status int
		body   string
	}{{"GET", 200, "v:a"}, {"GET", 404, "key missing\n"}, {"HEAD", 200, ""}, {"GET", 200, "v:c"}} {
		if resp, body := rc.Read(want.method); resp.StatusCode != want.status || body != want.body {
			t.Fatalf("pipelined %s: %d %q, want %d %q", want.method, resp.StatusCode, body, want.status, want.body)
		}
	}
	if n := writes.Load(); n != 1 {
		t.Fatalf("%d writes for four pipelined requests read at once, want 1", n)
	}
	// The next head comes in two pieces: the answer before it is not
	// held while the rest is awaited.
	rc.Send("GET /db/d HTTP/1.1\r\nHost: x\r\n\r\nGET /db/e HTTP/1.1\r\nHo")
	if resp, body := rc.Read("GET"); resp.StatusCode != 200 || body != "v:d" {
		t.Fatalf("answer before a partial head: %d %q", resp.StatusCode, body)
	}
	rc.Send("st: x\r\n\r\n")
	if resp, body := rc.Read("GET"); resp.StatusCode != 200 || body != "v:e" {
		t.Fatalf("answer to the head completed: %d %q", resp.StatusCode, body)
	}
	// Then one net/http serves: the fast answer before it comes first.
	rc.Send("GET /db/f HTTP/1.1\r\nHost: x\r\n\r\nGET /db/ HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp, body := rc.Read("GET"); resp.StatusCode != 200 || body != "v:f" || resp.Header.Get("X-Served-By") != "" {
		t.Fatalf("fast answer before net/http's: %d %q", resp.StatusCode, body)
	}
	if resp, body := rc.Read("GET"); !strings.HasPrefix(body, "fallback GET /db/") {
		t.Fatalf("net/http's answer: %d %q", resp.StatusCode, body)
	}
	// Many answers, more than the write buffer holds, in order.
	var reqs strings.Builder
	for i := 0; i < 100; i++ {
		fmt.Fprintf(&reqs, "GET /db/k%d HTTP/1.1\r\nHost: x\r\n\r\n", i)
	}
	many := h1fasttest.Dial(t, ts.addr)
	many.Send(reqs.String())
	for i := 0; i < 100; i++ {
		if resp, body := many.Read("GET"); resp.StatusCode != 200 || body != fmt.Sprintf("v:k%d", i) {
			t.Fatalf("answer %d of 100 pipelined: %d %q", i, resp.StatusCode, body)
		}
	}
}
