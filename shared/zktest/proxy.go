package zktest

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Proxy forwards TCP connections from its own loopback port to the
// server. A client dialing the proxy can be cut off alone while the
// server and other clients go on: that is how a test makes the server
// really expire one client's session. Its methods are safe for concurrent
// use.
type Proxy struct {
	l      net.Listener
	target string

	mu    sync.Mutex
	cut   bool                  // guarded by mu; refuse and drop connections
	conns map[net.Conn]struct{} // guarded by mu; both ends of live pairs
	wg    sync.WaitGroup
}

// Proxy starts a proxy to s, closed at the test's cleanup.
func (s *Server) Proxy(t testing.TB) *Proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("zktest: proxy: %v", err)
	}
	p := &Proxy{l: l, target: s.Addr(), conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// Addr is the proxy's host:port, for the client's server list.
func (p *Proxy) Addr() string { return p.l.Addr().String() }

// Cut drops every connection through the proxy and refuses new ones
// until Heal: to the client the server is gone, to the server the
// client is.
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
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); up.Close(); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); c.Close(); done <- struct{}{} }()
	<-done
	<-done
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
