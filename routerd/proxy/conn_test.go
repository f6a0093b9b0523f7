package proxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"spangle/shared/tlsconfig"
	"spangle/shared/tlstest"
)

// countingServer serves h and counts the connections it accepted.
func countingServer(t *testing.T, h http.Handler, tlsSrc *tlsconfig.Source) (addr string, conns *atomic.Int64) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns = new(atomic.Int64)
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second,
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				conns.Add(1)
			}
		}}
	go hs.Serve(tlsSrc.Listen(l))
	t.Cleanup(func() { hs.Close() })
	return l.Addr().String(), conns
}

func tlsPair(t *testing.T) (srv, cli *tlsconfig.Source) {
	set := tlstest.New(t)
	srv, err := tlsconfig.New(tlsconfig.Options{Settings: set.Peer("require")})
	if err != nil {
		t.Fatal(err)
	}
	cli, err = tlsconfig.New(tlsconfig.Options{Settings: set.Client()})
	if err != nil {
		t.Fatal(err)
	}
	return srv, cli
}

// An abandoned GET (its lookup timed out while the node was still
// working) leaves its pipelined connection to read the late answer and
// serve the next request, in plaintext and over TLS: no new connection,
// so no new handshake.
func TestGetAbandonedKeepsConnection(t *testing.T) {
	for _, mode := range []string{"plain", "tls"} {
		t.Run(mode, func(t *testing.T) {
			var srvTLS, cliTLS *tlsconfig.Source
			if mode == "tls" {
				srvTLS, cliTLS = tlsPair(t)
			}
			addr, conns := countingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if strings.HasSuffix(r.URL.Path, "/slow") {
					time.Sleep(400 * time.Millisecond) // well past the lookup's deadline, within drainGrace
				}
				w.Header().Set("X-Sequins-Version", "v1")
				w.Write([]byte("value"))
			}), srvTLS)
			u := NewHTTPUpstream(HTTPOptions{TLS: cliTLS})
			defer u.CloseIdleConnections()
			// Connected (and the handshake made) first.
			if _, err := u.Get(context.Background(), addr, &Request{DB: "db", Version: "v1", Key: []byte("k")}); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			_, err := u.Get(ctx, addr, &Request{DB: "db", Version: "v1", Key: []byte("slow")})
			cancel()
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("abandoned GET: %v, want a deadline error", err)
			}
			// The late answer is read in the background; then the
			// connection is idle again.
			deadline := time.Now().Add(5 * time.Second)
			for u.pipes.idleCount(addr) == 0 && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			for i := 0; i < 5; i++ {
				resp, err := u.Get(context.Background(), addr, &Request{DB: "db", Version: "v1", Key: []byte("k")})
				if err != nil || string(resp.Body) != "value" {
					t.Fatalf("GET after the abandoned one: %v %+v", err, resp)
				}
			}
			if n := conns.Load(); n != 1 {
				t.Fatalf("%d connections, want the one kept", n)
			}
		})
	}
}

// A kept-alive connection the node closed is noticed when reused, and the
// GET goes out again on a new one.
func TestGetRetriesConnectionClosedByNode(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var accepted atomic.Int64
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			go func() {
				defer c.Close() // one answer per connection, no Connection: close
				br := bufio.NewReader(c)
				for {
					line, err := br.ReadString('\n')
					if err != nil || line == "\r\n" {
						break
					}
				}
				c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Sequins-Version: v\r\n\r\nok"))
			}()
		}
	}()
	u := NewHTTPUpstream(HTTPOptions{})
	defer u.CloseIdleConnections()
	for i := 0; i < 3; i++ {
		resp, err := u.Get(context.Background(), l.Addr().String(), &Request{DB: "db", Version: "v", Key: []byte("k")})
		if err != nil || string(resp.Body) != "ok" {
			t.Fatalf("GET %d: %v %+v", i, err, resp)
		}
		time.Sleep(20 * time.Millisecond) // let the close arrive
	}
	if n := accepted.Load(); n != 3 {
		t.Fatalf("%d connections, want 3", n)
	}
}

// A node that restarts closes every kept-alive connection routerd holds to
// it; the next GET must not fail on a second dead one (e2e's full restart
// answered 502 "no replica reachable" when each replica's retry took
// another dead idle connection).
func TestGetAfterNodeClosedEveryConnection(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var mu sync.Mutex
	var open []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			open = append(open, c)
			mu.Unlock()
			go func() {
				br := bufio.NewReader(c)
				for {
					for {
						line, err := br.ReadString('\n')
						if err != nil {
							return
						}
						if line == "\r\n" {
							break
						}
					}
					time.Sleep(20 * time.Millisecond) // so the GETs below overlap
					c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Sequins-Version: v\r\n\r\nok"))
				}
			}()
		}
	}()
	u := NewHTTPUpstream(HTTPOptions{})
	u.pipes.depth = 1 // overlapping GETs open several connections
	defer u.CloseIdleConnections()
	get := func() error {
		resp, err := u.Get(context.Background(), l.Addr().String(), &Request{DB: "db", Version: "v", Key: []byte("k")})
		if err == nil && string(resp.Body) != "ok" {
			err = fmt.Errorf("body %q", resp.Body)
		}
		return err
	}
	// Four GETs at once leave four idle connections.
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- get() }()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	if len(open) < 2 {
		t.Fatalf("%d connections after overlapping GETs, want several idle", len(open))
	}
	for _, c := range open { // the node restarts
		c.Close()
	}
	mu.Unlock()
	time.Sleep(20 * time.Millisecond) // let the closes arrive
	if err := get(); err != nil {
		t.Fatalf("GET after the node closed every connection: %v", err)
	}
}

// A version that would split the request line is never sent.
func TestGetRefusesControlCharacters(t *testing.T) {
	u := NewHTTPUpstream(HTTPOptions{})
	_, err := u.Get(context.Background(), "127.0.0.1:1", &Request{DB: "db", Version: "v\r\nX-Evil: 1", Key: []byte("k")})
	if !errors.Is(err, errHeaderValue) {
		t.Fatalf("err %v, want errHeaderValue", err)
	}
}

func TestReadAnswer(t *testing.T) {
	cases := []struct {
		name, in   string
		status     int
		body       string
		keep, fail bool
	}{
		{"plain", "HTTP/1.1 200 OK\r\nContent-Length: 3\r\ncontent-type: a/b\r\nX-Sequins-Version: v1\r\n\r\nabc", 200, "abc", true, false},
		{"close", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nConnection: close\r\n\r\nx", 200, "x", false, false},
		{"http10", "HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx", 200, "x", false, false},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n", 200, "abcde", false, false},
		{"until close", "HTTP/1.1 200 OK\r\n\r\nabc", 200, "abc", false, false},
		{"continue", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx", 200, "x", true, false},
		{"404", "HTTP/1.1 404 Not Found\r\nContent-Length: 4\r\n\r\nnope", 404, "", true, false},
		{"503 long body", "HTTP/1.1 503 Busy\r\nRetry-After: 2\r\nContent-Length: 99999\r\n\r\n", 503, "", false, false},
		{"no reason", "HTTP/1.1 204\r\n\r\n", 204, "", true, false},
		{"over limit", "HTTP/1.1 200 OK\r\nContent-Length: 2000\r\n\r\n", 0, "", false, true},
		{"bad status", "HTTP/1.1 2x0 OK\r\n\r\n", 0, "", false, true},
		{"not http", "SSH-2.0-OpenSSH\r\n\r\n", 0, "", false, true},
		{"bad length", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", 0, "", false, true},
		{"two lengths", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nxx", 0, "", false, true},
		{"gzip", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", 0, "", false, true},
		{"no colon", "HTTP/1.1 200 OK\r\nbroken\r\n\r\n", 0, "", false, true},
		{"short body", "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc", 0, "", false, true},
		{"101", "HTTP/1.1 101 Switching\r\n\r\n", 0, "", false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, keep, err := readAnswer(bufio.NewReader(strings.NewReader(c.in)), "node", 1024, &seenValues{})
			if c.fail {
				if err == nil {
					t.Fatalf("accepted: %+v", resp)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if resp.Status != c.status || string(resp.Body) != c.body || keep != c.keep {
				t.Fatalf("got %d %q keep %v, want %d %q keep %v", resp.Status, resp.Body, keep, c.status, c.body, c.keep)
			}
		})
	}
	resp, _, err := readAnswer(bufio.NewReader(strings.NewReader(cases[0].in)), "node", 1024, &seenValues{})
	if err != nil || resp.ContentType != "a/b" || resp.Version != "v1" {
		t.Fatalf("headers: %v %+v", err, resp)
	}
	// Answers read one after another on a connection keep their own
	// header values, equal to the last one's or not.
	var seen seenValues
	br := bufio.NewReader(strings.NewReader("HTTP/1.1 200 OK\r\nContent-Type: a/b\r\nX-Sequins-Version: v1\r\nContent-Length: 0\r\n\r\n" +
		"HTTP/1.1 200 OK\r\nContent-Type: a/b\r\nX-Sequins-Version: v2\r\nContent-Length: 0\r\n\r\n" +
		"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"))
	for _, want := range []struct{ ct, v string }{{"a/b", "v1"}, {"a/b", "v2"}, {"", ""}} {
		resp, _, err := readAnswer(br, "node", 1024, &seen)
		if err != nil || resp.ContentType != want.ct || resp.Version != want.v {
			t.Fatalf("answer in a row: %v %+v, want %q %q", err, resp, want.ct, want.v)
		}
	}
}

// FuzzReadAnswer: whatever a node sends, readAnswer returns an answer
// within the value limit or an error, and never panics.
func FuzzReadAnswer(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nX-Sequins-Version: v1\r\n\r\nabc",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.0 503 x\r\nRetry-After: 1\r\n\r\n",
		"HTTP/1.1 200\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		resp, _, err := readAnswer(bufio.NewReaderSize(strings.NewReader(string(in)), upBufSize), "node", 64, &seenValues{})
		if err == nil && (resp == nil || len(resp.Body) > 64) {
			t.Fatalf("answer %+v", resp)
		}
	})
}

// After close, a connection put back (a drain or a dial that ended
// late) is closed, not kept idle.
func TestPutAfterCloseClosesIt(t *testing.T) {
	p := newGetConns(nil, 10, time.Minute)
	kept, _ := net.Pipe()
	p.put("node", &upConn{c: kept}, time.Now())
	p.close()
	a, b := net.Pipe()
	p.put("node", &upConn{c: a}, time.Now())
	if n := p.idleCount("node"); n != 0 {
		t.Fatalf("%d idle after close", n)
	}
	for _, c := range []net.Conn{kept, a} {
		if _, err := c.Write([]byte("x")); !errors.Is(err, io.ErrClosedPipe) {
			t.Fatalf("write on a connection of a closed pool: %v, want it closed", err)
		}
	}
	b.Close()
}

// idleCount is how many connections to addr are idle.
func (p *getConns) idleCount(addr string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle[addr])
}

// A request that found no idle connection takes one another request puts
// back before its own dial (a slow TLS handshake) is done; the dialled
// connection is kept for the next.
func TestAcquireTakesConnectionPutBackDuringDial(t *testing.T) {
	release := make(chan struct{})
	var dials atomic.Int64
	p := newGetConns(func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		<-release
		a, _ := net.Pipe()
		return a, nil
	}, 10, time.Minute)
	defer p.closeIdle()
	back, _ := net.Pipe()
	putBack := &upConn{c: back}
	go func() {
		time.Sleep(20 * time.Millisecond)
		p.put("node", putBack, time.Now())
	}()
	c, reused, err := p.acquire(context.Background(), "node")
	if err != nil || c != putBack || !reused {
		t.Fatalf("acquire: %v %v reused %v, want the connection put back", err, c, reused)
	}
	close(release)
	deadline := time.Now().Add(5 * time.Second)
	for p.idleCount("node") != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("%d idle after the dial ended, want the dialled connection kept", p.idleCount("node"))
		}
		time.Sleep(time.Millisecond)
	}
	if n := dials.Load(); n != 1 {
		t.Fatalf("%d dials", n)
	}
	// A request that leaves while waiting gets nothing, and a connection
	// put back later is kept idle, not lost to it.
	stuck := make(chan struct{})
	defer close(stuck)
	p2 := newGetConns(func(ctx context.Context, network, addr string) (net.Conn, error) {
		<-stuck // past the request's end: dials outlive their request
		return nil, errors.New("refused")
	}, 10, time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, _, err := p2.acquire(ctx, "node"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("acquire after the request left: %v", err)
	}
	p2.put("node", putBack, time.Now())
	if p2.idleCount("node") != 1 {
		t.Fatal("connection put back after the waiter left was not kept")
	}
}
