package s3test

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// Proxy forwards TCP connections from its own loopback port to a target
// and can misbehave as a flaky network does: cut each connection after a
// number of bytes from the server, or refuse every connection. Its methods
// are safe for concurrent use.
type Proxy struct {
	l      net.Listener
	target string

	cutAfter atomic.Int64 // bytes from the server per connection; 0 never
	cuts     atomic.Int64 // connections cut by cutAfter

	mu        sync.Mutex
	down      bool                  // guarded by mu; refuse and drop connections
	conns     map[net.Conn]struct{} // guarded by mu; both ends of live pairs
	total     int64                 // guarded by mu; bytes from the server so far
	triggerAt int64                 // guarded by mu; when to call trigger
	trigger   func()                // guarded by mu; AfterBytes's function
	wg        sync.WaitGroup
}

// NewProxy starts a proxy to target (host:port), closed at the test's
// cleanup.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("s3test: proxy: %v", err)
	}
	p := &Proxy{l: l, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// Proxy starts a proxy to s, closed at the test's cleanup.
func (s *Server) Proxy(t testing.TB) *Proxy { return NewProxy(t, s.Addr()) }

// Endpoint is the proxy's URL, to use in place of the server's.
func (p *Proxy) Endpoint() string { return "http://" + p.Addr() }

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.l.Addr().String() }

// CutAfter makes every connection opened from now on drop once n bytes
// have come from the server (n <= 0: never): to the client, a download
// stops mid-object.
func (p *Proxy) CutAfter(n int64) { p.cutAfter.Store(max(n, 0)) }

// Cuts is how many connections CutAfter has dropped.
func (p *Proxy) Cuts() int64 { return p.cuts.Load() }

// Down drops every connection and refuses new ones until Up: to the
// client the server is unreachable.
func (p *Proxy) Down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for c := range p.conns {
		c.Close()
	}
}

// Up lets connections through again.
func (p *Proxy) Up() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
}

func (p *Proxy) close() {
	p.l.Close()
	p.Down()
	p.wg.Wait()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

func (p *Proxy) serve(c net.Conn) {
	defer p.wg.Done()
	defer c.Close()
	if !p.track(c) {
		return
	}
	defer p.untrack(c)
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer up.Close()
	if !p.track(up) {
		return
	}
	defer p.untrack(up)
	limit := p.cutAfter.Load()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); up.Close(); done <- struct{}{} }()
	go func() {
		p.copyDown(c, up, limit)
		c.Close()
		up.Close()
		done <- struct{}{}
	}()
	<-done
	<-done
}

// copyDown copies the server's bytes to the client, at most limit of
// them when limit > 0, counting them for AfterBytes.
func (p *Proxy) copyDown(c, up net.Conn, limit int64) {
	buf := make([]byte, 32<<10)
	var sent int64
	for {
		want := int64(len(buf))
		if limit > 0 {
			want = min(want, limit-sent)
		}
		n, err := up.Read(buf[:want])
		if n > 0 {
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
			sent += int64(n)
			p.sent(int64(n))
		}
		if limit > 0 && sent >= limit {
			p.cuts.Add(1)
			return
		}
		if err != nil {
			return
		}
	}
}

// AfterBytes calls f once, in its own goroutine, when n more bytes have
// come from the server through the proxy: a test stops the server at a
// known point of a download.
func (p *Proxy) AfterBytes(n int64, f func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.triggerAt = p.total + n
	p.trigger = f
}

func (p *Proxy) sent(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.total += n
	if p.trigger != nil && p.total >= p.triggerAt {
		go p.trigger()
		p.trigger = nil
	}
}

// track records c unless the proxy is down.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.down {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c)
}
