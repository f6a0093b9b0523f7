package membership

import (
	"context"
	"errors"
	"testing"

	"spangle/shared/topo"
	"spangle/shared/topo/memtopo"
)

// TestDBRemovedPrunesOnceUnpublished: two nodes serve a db; once the
// first has withdrawn it, its DBRemoved leaves the entries (the second
// still publishes); with the service down the second's fails; once it
// is back, the second's deletes the version entries and the db leaves
// the map, and the first's then finds nothing left. Another db stays.
func TestDBRemovedPrunesOnceUnpublished(t *testing.T) {
	srv := memtopo.NewServer()
	a, b := join(t, srv, "10.0.0.1:1", testOpts{}), join(t, srv, "10.0.0.2:1", testOpts{})
	for _, m := range []*member{a, b} {
		waitUntil(t, m.addr+" to see both nodes", func() bool { return len(m.conn.Map().Nodes) == 2 })
	}
	held := map[*member][]int{}
	for _, m := range []*member{a, b} {
		held[m] = m.held(t, "db", "v1", 4)
		m.ready("db", "v1", held[m], 4)
		m.ready("keep", "v1", m.held(t, "keep", "v1", 4), 4)
	}
	watch := srv.Watcher()
	defer watch.Close()
	waitUntil(t, "db and keep complete", func() bool {
		m := watch.Map()
		return m.Version("db", "v1").Complete(2) && m.Version("keep", "v1").Complete(2)
	})
	ctx := context.Background()
	removed := func(m *member) (bool, error) { return m.c.Hooks().DBRemoved(ctx, "db") }

	a.c.Hooks().BeforeRemove("db", "v1", held[a])
	if done, err := removed(a); done || err != nil {
		t.Fatalf("first node's DBRemoved while the second publishes: %v, %v; want false", done, err)
	}
	if v := watch.Map().Version("db", "v1"); v == nil || !v.Complete(1) {
		t.Fatalf("db/v1 after the first node withdrew: %+v, want it served by the second", v)
	}

	srv.SetDown(true)
	b.c.Hooks().BeforeRemove("db", "v1", held[b]) // remembered by the Conn
	if done, err := removed(b); done || !errors.Is(err, topo.ErrUnavailable) {
		t.Fatalf("DBRemoved with the service down: %v, %v; want ErrUnavailable", done, err)
	}
	srv.SetDown(false)
	waitUntil(t, "the second node's DBRemoved to succeed", func() bool {
		done, err := removed(b)
		if err != nil {
			t.Fatalf("DBRemoved with the service back: %v", err)
		}
		return done
	})
	waitUntil(t, "db to leave the map", func() bool { return watch.Map().Version("db", "v1") == nil })
	if done, err := removed(a); !done || err != nil {
		t.Fatalf("first node's DBRemoved once the entries are gone: %v, %v; want true", done, err)
	}
	if m := watch.Map(); !m.Version("keep", "v1").Complete(2) || len(m.DBNames()) != 1 {
		t.Fatalf("the map after the removal names %v; want keep alone, complete", m.DBNames())
	}
}

// TestDBAddedAgainStartsAfresh: after a db was removed, a version of it
// older than the one served before is activated when it is complete:
// the rule that activation never goes back holds within one life of a
// db.
func TestDBAddedAgainStartsAfresh(t *testing.T) {
	srv := memtopo.NewServer()
	a := join(t, srv, "10.0.0.1:1", testOpts{})
	waitUntil(t, "registered", func() bool { return len(a.conn.Map().Nodes) == 1 })
	held := a.held(t, "db", "v2", 4)
	a.ready("db", "v2", held, 4)
	waitUntil(t, "v2 active", func() bool { return a.act.active("db", "v2") })
	a.c.Hooks().BeforeRemove("db", "v2", held)
	if done, err := a.c.Hooks().DBRemoved(context.Background(), "db"); !done || err != nil {
		t.Fatalf("DBRemoved: %v, %v", done, err)
	}
	a.ready("db", "v1", a.held(t, "db", "v1", 4), 4)
	waitUntil(t, "v1 active after the db was added again", func() bool { return a.act.active("db", "v1") })
}
