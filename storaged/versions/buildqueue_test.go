package versions

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestBuildQueueOrder: with every slot taken, waiters are admitted lowest
// key first, equal keys first come first, and no more at once than the
// slots.
func TestBuildQueueOrder(t *testing.T) {
	q := newBuildQueue(2)
	ctx := context.Background()
	r1, err := q.acquire(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := q.acquire(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu     sync.Mutex
		order  []string
		inside int
		most   int
		wg     sync.WaitGroup
	)
	keys := []struct {
		name string
		key  uint64
	}{{"c", 30}, {"a1", 10}, {"d", 40}, {"b", 20}, {"a2", 10}}
	for i, k := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rel, err := q.acquire(ctx, k.key)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, k.name)
			inside++
			most = max(most, inside)
			mu.Unlock()
			time.Sleep(time.Millisecond)
			mu.Lock()
			inside--
			mu.Unlock()
			rel()
		}()
		// Arrivals in the listed order: a1 before a2.
		waitFor(t, "the waiters queued", func() bool { q.mu.Lock(); defer q.mu.Unlock(); return len(q.waiting) == i+1 })
	}
	r1()
	wg.Wait()
	r2()
	want := "[a1 a2 b c d]"
	if got := fmt.Sprint(order); got != want {
		t.Errorf("admitted %s, want %s", got, want)
	}
	if most > 2 {
		t.Errorf("%d builds at once, want at most 2 (one slot still held)", most)
	}
	if q.free != 2 {
		t.Errorf("%d slots free at the end, want 2", q.free)
	}
}

// TestBuildQueueCancel: a waiter whose context ends leaves the queue
// without taking a slot, and the next waiter still gets the slot freed.
func TestBuildQueueCancel(t *testing.T) {
	q := newBuildQueue(1)
	rel, err := q.acquire(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := q.acquire(ctx, 0)
		done <- err
	}()
	waitFor(t, "the waiters queued", func() bool { q.mu.Lock(); defer q.mu.Unlock(); return len(q.waiting) == 1 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled acquire returned %v", err)
	}
	got := make(chan func(), 1)
	go func() {
		r, err := q.acquire(context.Background(), 5)
		if err != nil {
			t.Error(err)
		}
		got <- r
	}()
	waitFor(t, "the waiters queued", func() bool { q.mu.Lock(); defer q.mu.Unlock(); return len(q.waiting) == 1 })
	rel()
	select {
	case r := <-got:
		r()
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter after a cancelled one never got the slot")
	}
	if q.free != 1 || len(q.waiting) != 0 {
		t.Errorf("free %d, waiting %d at the end; want 1, 0", q.free, len(q.waiting))
	}
}

// TestRotatedOrder: each node's order is the shared circle started at
// its own n-th, so that with 3 nodes and replication 2 every db has,
// among any two nodes, one that builds it within the first two thirds.
func TestRotatedOrder(t *testing.T) {
	const nodes, dbs = 3, 3000
	pos := func(db string, rank int) float64 {
		return float64(RotatedOrder(db, rank, nodes)) / float64(^uint64(0))
	}
	worst := 0.0
	for i := range dbs {
		db := fmt.Sprintf("db-%04d", i)
		for a := range nodes {
			for b := a + 1; b < nodes; b++ {
				worst = max(worst, min(pos(db, a), pos(db, b)))
			}
		}
		if RotatedOrder(db, 0, nodes) != DBOrder(db) {
			t.Fatalf("rank 0 does not follow the shared order")
		}
	}
	if worst > 2.0/3+0.001 {
		t.Errorf("some pair of nodes builds a db first at %.3f of the order, want at most 2/3", worst)
	}
	if worst < 0.6 {
		t.Errorf("worst first build at %.3f: the names' order does not spread over the circle", worst)
	}
}
