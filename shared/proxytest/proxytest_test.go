package proxytest_test

import (
	"bytes"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"spangle/shared/proxytest"
)

// echo starts a plain TCP server that sends back what it reads, closed at
// the test's cleanup.
func echo(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := map[net.Conn]struct{}{}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns[c] = struct{}{}
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return l.Addr().String()
}

// dial connects to addr with a deadline, so that a broken proxy fails the
// test rather than hanging it.
func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(30 * time.Second))
	t.Cleanup(func() { c.Close() })
	return c
}

// roundTrip sends msg on c and reads back as many bytes.
func roundTrip(c net.Conn, msg []byte) ([]byte, error) {
	if _, err := c.Write(msg); err != nil {
		return nil, err
	}
	got := make([]byte, len(msg))
	n, err := io.ReadFull(c, got)
	return got[:n], err
}

// closed reports whether c's peer has gone: a read ends with EOF or a
// reset rather than data or a timeout.
func closed(c net.Conn) bool {
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

func TestForwards(t *testing.T) {
	p := proxytest.Start(t, echo(t))
	c := dial(t, p.Addr())
	msg := bytes.Repeat([]byte("spangle "), 100<<10) // several buffers
	if got, err := roundTrip(c, msg); err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("through the proxy: %d of %d bytes, %v", len(got), len(msg), err)
	}
	if p.Cuts() != 0 {
		t.Fatalf("Cuts = %d without CutAfter", p.Cuts())
	}
}

func TestCutAndHeal(t *testing.T) {
	p := proxytest.Start(t, echo(t))
	live := dial(t, p.Addr())
	if _, err := roundTrip(live, []byte("ping")); err != nil {
		t.Fatal(err)
	}
	p.Cut()
	if !closed(live) {
		t.Fatal("a live connection survived Cut")
	}
	if got, err := roundTrip(dial(t, p.Addr()), []byte("ping")); err == nil {
		t.Fatalf("a new connection through a cut proxy answered %q", got)
	}
	p.Heal()
	if got, err := roundTrip(dial(t, p.Addr()), []byte("ping")); err != nil || string(got) != "ping" {
		t.Fatalf("after Heal: %q, %v", got, err)
	}
}

func TestCutAfter(t *testing.T) {
	p := proxytest.Start(t, echo(t))
	before := dial(t, p.Addr())
	if _, err := roundTrip(before, []byte("x")); err != nil {
		t.Fatal(err)
	}
	const n = 100 << 10
	p.CutAfter(n)
	c := dial(t, p.Addr())
	msg := bytes.Repeat([]byte{'k'}, 3*n)
	go func() { _, _ = c.Write(msg) }() // the proxy may stop reading it
	got, err := io.ReadAll(c)           // to EOF, or a reset if msg was unread
	if len(got) != n {
		t.Fatalf("got %d bytes before the cut (%v); want %d", len(got), err, n)
	}
	if p.Cuts() != 1 {
		t.Fatalf("Cuts = %d; want 1", p.Cuts())
	}
	// A connection opened before CutAfter keeps its old limit (none).
	if got, err := roundTrip(before, msg); err != nil || len(got) != len(msg) {
		t.Fatalf("older connection: %d of %d bytes, %v", len(got), len(msg), err)
	}
	p.CutAfter(0)
	if got, err := roundTrip(dial(t, p.Addr()), msg); err != nil || len(got) != len(msg) {
		t.Fatalf("after CutAfter(0): %d of %d bytes, %v", len(got), len(msg), err)
	}
	if p.Cuts() != 1 {
		t.Fatalf("Cuts = %d after CutAfter(0); want 1", p.Cuts())
	}
}

func TestAfterBytes(t *testing.T) {
	p := proxytest.Start(t, echo(t))
	c := dial(t, p.Addr())
	if _, err := roundTrip(c, []byte("earlier bytes do not count")); err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	fired := make(chan struct{}, 10)
	p.AfterBytes(10, func() { calls.Add(1); fired <- struct{}{} })
	if _, err := roundTrip(c, []byte("123456789")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-fired:
		t.Fatal("AfterBytes(10) fired after 9 bytes")
	default:
	}
	if _, err := roundTrip(c, []byte("0")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-fired:
	case <-time.After(30 * time.Second):
		t.Fatal("AfterBytes(10) never fired after 10 bytes")
	}
	if _, err := roundTrip(c, []byte("more bytes, and more")); err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("called %d times; want once", n)
	}

	// The callback may cut the proxy itself, as storaged's retry tests do.
	p.AfterBytes(4, p.Cut)
	if _, err := roundTrip(c, []byte("ping")); err != nil {
		t.Fatal(err)
	}
	if !closed(c) {
		t.Fatal("the connection survived a Cut from AfterBytes")
	}
}

func TestClose(t *testing.T) {
	target := echo(t)
	var addr string
	var live net.Conn
	t.Run("open", func(t *testing.T) {
		p := proxytest.Start(t, target)
		addr = p.Addr()
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		live = c // outlives the subtest, and with it the proxy
		live.SetDeadline(time.Now().Add(30 * time.Second))
		if _, err := roundTrip(live, []byte("ping")); err != nil {
			t.Fatal(err)
		}
	})
	if live == nil {
		t.FailNow()
	}
	defer live.Close()
	if !closed(live) {
		t.Fatal("a live connection survived the proxy's cleanup")
	}
	if c, err := net.DialTimeout("tcp", addr, 5*time.Second); err == nil {
		c.Close()
		t.Fatal("the proxy's port still accepts after its cleanup")
	}
}
