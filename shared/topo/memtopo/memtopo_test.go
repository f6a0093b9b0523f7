package memtopo_test

import (
	"context"
	"errors"
	"testing"

	"spangle/shared/topo"
	"spangle/shared/topo/memtopo"
	"spangle/shared/topo/topotest"
)

func backend(s *memtopo.Server) topotest.Backend {
	return topotest.Backend{
		NewConn: func(t *testing.T) topo.Conn {
			c := s.Conn()
			t.Cleanup(func() { c.Close() })
			return c
		},
		NewWatcher: func(t *testing.T) topo.Watcher {
			w := s.Watcher()
			t.Cleanup(func() { w.Close() })
			return w
		},
		Down: func(*testing.T) { s.SetDown(true) },
		Up:   func(*testing.T) { s.SetDown(false) },
		Cut: func(_ *testing.T, c topo.Conn) {
			s.Isolate(c.(*memtopo.Conn), true)
			s.Expire(c.(*memtopo.Conn))
		},
		Heal: func(_ *testing.T, c topo.Conn) { s.Isolate(c.(*memtopo.Conn), false) },
	}
}

func TestSuite(t *testing.T) {
	topotest.Run(t, backend(memtopo.NewServer()))
}

// Expire without isolating: the session's entries vanish and come back
// at once, in two map revisions.
func TestExpireRepublishesAtOnce(t *testing.T) {
	s := memtopo.NewServer()
	c, w := s.Conn(), s.Watcher()
	ctx := context.Background()
	if err := c.RegisterNode(ctx, topo.Node{ID: "a", Addr: "h:1"}); err != nil {
		t.Fatal(err)
	}
	rev := w.Map().Revision
	s.Expire(c)
	m := w.Map()
	if _, ok := m.Nodes["h:1"]; !ok || m.Revision != rev+2 {
		t.Fatalf("after Expire: rev %d (want %d), nodes %v", m.Revision, rev+2, m.Nodes)
	}
	if !c.Connected() {
		t.Error("not connected after Expire")
	}
}

// An isolated Conn fails while the others go on.
func TestIsolateOne(t *testing.T) {
	s := memtopo.NewServer()
	a, b := s.Conn(), s.Conn()
	ctx := context.Background()
	s.Isolate(a, true)
	if err := a.RegisterNode(ctx, topo.Node{Addr: "h:1"}); !errors.Is(err, topo.ErrUnavailable) {
		t.Fatalf("isolated RegisterNode = %v", err)
	}
	if err := b.RegisterNode(ctx, topo.Node{Addr: "h:2"}); err != nil {
		t.Fatal(err)
	}
	if len(a.Map().Nodes) != 0 || len(b.Map().Nodes) != 1 {
		t.Fatalf("maps: isolated %v, other %v", a.Map().Nodes, b.Map().Nodes)
	}
	s.Isolate(a, false)
	if n := len(b.Map().Nodes); n != 2 {
		t.Fatalf("after healing, %d nodes", n)
	}
	// An idempotent call publishes no new map.
	rev := b.Map().Revision
	if err := b.RegisterNode(ctx, topo.Node{Addr: "h:2"}); err != nil || b.Map().Revision != rev {
		t.Fatalf("re-register: %v, rev %d -> %d", err, rev, b.Map().Revision)
	}
}
