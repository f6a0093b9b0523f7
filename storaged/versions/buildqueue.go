package versions

import (
	"container/heap"
	"context"
	"hash/fnv"
	"sync"
)

// buildQueue admits the builds of versions a few at a time, the lowest
// key first. Before it, every version decided at once loaded at once,
// sharing the node's file slots (MaxParallelLoads) one file at a time,
// so that at a start with many dbs every version finished near the end
// of the whole build and was registered then. Admitted a few at a time,
// versions finish one after another and each is served as soon as it is
// built; ordered by Hooks.BuildOrder, which rotates the order by the
// node's place in the cluster, a partition's replicas are built at
// different times and its first copy early (see docs/design.md, "A start
// with many dbs").
//
// Only builds from the source (or copies from peers) of new versions
// queue here; reusing a complete local copy does not.
type buildQueue struct {
	mu      sync.Mutex
	free    int // slots not taken
	seq     uint64
	waiting waiters
}

func newBuildQueue(slots int) *buildQueue {
	return &buildQueue{free: max(slots, 1)}
}

type waiter struct {
	key, seq uint64
	ready    chan struct{} // closed once admitted
	index    int           // in the heap; -1 once out of it
}

// acquire waits for a slot, lowest key first (then first come), and
// returns the function that gives it back. It returns ctx's error if ctx
// ends first.
func (q *buildQueue) acquire(ctx context.Context, key uint64) (func(), error) {
	q.mu.Lock()
	if q.free > 0 && len(q.waiting) == 0 {
		q.free--
		q.mu.Unlock()
		return q.release, nil
	}
	w := &waiter{key: key, seq: q.seq, ready: make(chan struct{})}
	q.seq++
	heap.Push(&q.waiting, w)
	q.admitLocked()
	q.mu.Unlock()
	select {
	case <-w.ready:
		return q.release, nil
	case <-ctx.Done():
		q.mu.Lock()
		if w.index >= 0 {
			heap.Remove(&q.waiting, w.index)
			q.mu.Unlock()
		} else {
			// Admitted meanwhile: the slot goes to the next.
			q.mu.Unlock()
			q.release()
		}
		return nil, ctx.Err()
	}
}

func (q *buildQueue) release() {
	q.mu.Lock()
	q.free++
	q.admitLocked()
	q.mu.Unlock()
}

// admitLocked gives free slots to the first waiters.
func (q *buildQueue) admitLocked() {
	for q.free > 0 && len(q.waiting) > 0 {
		w := heap.Pop(&q.waiting).(*waiter)
		q.free--
		close(w.ready)
	}
}

// waiters is a heap of waiters, lowest key first, then first come.
type waiters []*waiter

func (h waiters) Len() int { return len(h) }
func (h waiters) Less(i, j int) bool {
	if h[i].key != h[j].key {
		return h[i].key < h[j].key
	}
	return h[i].seq < h[j].seq
}
func (h waiters) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *waiters) Push(x any) {
	w := x.(*waiter)
	w.index = len(*h)
	*h = append(*h, w)
}
func (h *waiters) Pop() any {
	old := *h
	w := old[len(old)-1]
	old[len(old)-1] = nil
	w.index = -1
	*h = old[:len(old)-1]
	return w
}

// DBOrder is a db's place in a build order that every node computes
// alike: its name's hash, spread over the uint64 range. A node that
// rotates it by its own place in the cluster (RotatedOrder) builds the
// dbs in the same circular order as its peers, from a different start.
func DBOrder(db string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(db))
	// FNV's high bits vary little between names that differ in their
	// last bytes (db-001, db-002): mix them (splitmix64's finalizer).
	x := h.Sum64()
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// RotatedOrder is db's build order on the node at index rank (from 0) of
// n nodes: DBOrder moved back by rank n-ths of the circle, so that node
// rank starts where the circle's rank-th n-th begins. With replication r
// over n nodes, every partition then has a replica among the first
// (n-r+1)/n of some holder's order, rather than all replicas at the same
// place in every node's.
func RotatedOrder(db string, rank, n int) uint64 {
	if n <= 1 || rank <= 0 {
		return DBOrder(db)
	}
	step := ^uint64(0) / uint64(n)
	return DBOrder(db) - uint64(rank%n)*step
}
