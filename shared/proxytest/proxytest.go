package proxytest

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// Proxy forwards TCP connections from its own loopback port to a target,
// so that a test can cut the clients that dial it off the server while
// the server and other clients go on. Its methods are safe for concurrent
// use.
type Proxy struct {
	l      net.Listener
	target string

	cutAfter atomic.Int64 // bytes from the server per connection; 0 never
	cuts     atomic.Int64 // connections cut by cutAfter

	mu        sync.Mutex
	cut       bool                  // guarded by mu; refuse and drop connections
	conns     map[net.Conn]struct{} // guarded by mu; both ends of live pairs
	total     int64                 // guarded by mu; bytes from the server so far
	triggerAt int64                 // guarded by mu; when to call trigger
	trigger   func()                // guarded by mu; AfterBytes's function
	wg        sync.WaitGroup
}

// Start starts a proxy to target (host:port), closed at the test's
// cleanup: its port stops listening and its connections are dropped.
func Start(t testing.TB, target string) *Proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxytest: listen: %v", err)
	}
	p := &Proxy{l: l, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// Addr is the proxy's host:port, for the client in place of the server's.
func (p *Proxy) Addr() string { return p.l.Addr().String() }

// Cut drops every connection through the proxy and refuses new ones
// until Heal: to the client the server is gone, to the server the client
// is.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		c.Close()
	}
}

// Heal lets connections through again.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
}

// CutAfter makes every connection opened from now on drop once n bytes
// have come from the server (n <= 0: never): to the client, a download
// stops mid-object.
func (p *Proxy) CutAfter(n int64) { p.cutAfter.Store(max(n, 0)) }

// Cuts is how many connections CutAfter has dropped, so that a test can
// check its faults really happened.
func (p *Proxy) Cuts() int64 { return p.cuts.Load() }

// AfterBytes calls f once, in its own goroutine, when n more bytes have
// come from the server through the proxy: a test stops the server, or
// cuts the proxy, at a known point of a download.
func (p *Proxy) AfterBytes(n int64, f func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.triggerAt = p.total + n
	p.trigger = f
}

func (p *Proxy) close() {
	p.l.Close()
	p.Cut()
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
			// Counted before the client can see them, so a test that
			// calls AfterBytes once a reply arrived never has that reply
			// counted towards the new mark.
			sent += int64(n)
			p.sent(int64(n))
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
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

// sent counts n bytes from the server and fires AfterBytes's function
// when they reach its mark.
func (p *Proxy) sent(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.total += n
	if p.trigger != nil && p.total >= p.triggerAt {
		go p.trigger()
		p.trigger = nil
	}
}

// track records c unless the proxy is cut.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
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
