package cache

import (
	"context"
	"math"
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"golang.org/x/sync/singleflight"
)

// entryOverhead approximates the bookkeeping bytes of one entry (list
// element, map slot, key headers), so that many tiny values still count.
const entryOverhead = 96

// Key names one answer.
type Key struct {
	DB, Version, Key string
}

func (k Key) size() int { return len(k.DB) + len(k.Version) + len(k.Key) + entryOverhead }

// flightKey is the singleflight key; NUL cannot occur in db or version
// names, so distinct Keys never share one.
func (k Key) flightKey() string { return k.DB + "\x00" + k.Version + "\x00" + k.Key }

// Options configure a Cache. Zero values are the documented defaults.
type Options[V any] struct {
	// MaxBytes bounds the cache's size; 0 or less turns caching off
	// (and with it the collapsing of concurrent misses).
	MaxBytes int64
	// Size is the byte size of a value (default 0: only keys count).
	Size func(V) int
	// OnHit and OnMiss, if set, count lookups.
	OnHit, OnMiss func()
}

// Cache is safe for concurrent use.
type Cache[V any] struct {
	opts Options[V]

	mu    sync.Mutex
	lru   *simplelru.LRU[Key, V] // guarded by mu
	bytes int64                  // guarded by mu; the size of what lru holds

	group singleflight.Group
}

// New returns a cache; with MaxBytes <= 0, a pass-through.
func New[V any](opts Options[V]) *Cache[V] {
	if opts.Size == nil {
		opts.Size = func(V) int { return 0 }
	}
	if opts.OnHit == nil {
		opts.OnHit = func() {}
	}
	if opts.OnMiss == nil {
		opts.OnMiss = func() {}
	}
	c := &Cache[V]{opts: opts}
	if opts.MaxBytes > 0 {
		// The count bound is never reached; bytes are bounded in add.
		c.lru, _ = simplelru.NewLRU[Key, V](math.MaxInt, func(k Key, v V) {
			c.bytes -= int64(k.size() + opts.Size(v))
		})
	}
	return c
}

// Enabled reports whether the cache holds anything at all.
func (c *Cache[V]) Enabled() bool { return c.lru != nil }

// Fill computes the value of a missing key. keep says whether the value
// may be cached (an answer, not an error-like result).
type Fill[V any] func(ctx context.Context) (v V, keep bool, err error)

// Get returns the value of k, from the cache or by calling fill. While
// one fill of k runs, other callers of k wait for its result instead of
// calling fill themselves. fill runs under a context that keeps ctx's
// values but not its cancellation, since its result serves every waiter;
// it must bound its own time. hit reports whether the value came from
// the cache.
func (c *Cache[V]) Get(ctx context.Context, k Key, fill Fill[V]) (v V, hit bool, err error) {
	if c.lru == nil {
		v, _, err = fill(ctx)
		return v, false, err
	}
	c.mu.Lock()
	v, ok := c.lru.Get(k)
	c.mu.Unlock()
	if ok {
		c.opts.OnHit()
		return v, true, nil
	}
	c.opts.OnMiss()
	ch := c.group.DoChan(k.flightKey(), func() (any, error) {
		v, keep, err := fill(context.WithoutCancel(ctx))
		if err == nil && keep {
			c.add(k, v)
		}
		return v, err
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			var zero V
			return zero, false, r.Err
		}
		return r.Val.(V), false, nil
	case <-ctx.Done():
		var zero V
		return zero, false, ctx.Err()
	}
}

// Cached returns the cached value of k, counting a hit, or ok false,
// counting nothing: a caller that then calls Get has its lookup counted
// once. It lets a hit skip building Get's fill function.
func (c *Cache[V]) Cached(k Key) (v V, ok bool) {
	if c.lru == nil {
		return v, false
	}
	c.mu.Lock()
	v, ok = c.lru.Get(k)
	c.mu.Unlock()
	if ok {
		c.opts.OnHit()
	}
	return v, ok
}

func (c *Cache[V]) add(k Key, v V) {
	sz := int64(k.size() + c.opts.Size(v))
	if sz > c.opts.MaxBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Remove(k) // replace: keep the byte count right
	c.lru.Add(k, v)
	c.bytes += sz
	for c.bytes > c.opts.MaxBytes {
		c.lru.RemoveOldest()
	}
}

// Stats is the cache's size, for the status page.
type Stats struct {
	Entries  int   `json:"entries"`
	Bytes    int64 `json:"bytes"`
	MaxBytes int64 `json:"max_bytes"`
}

// Stats returns the current size.
func (c *Cache[V]) Stats() Stats {
	if c.lru == nil {
		return Stats{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return Stats{Entries: c.lru.Len(), Bytes: c.bytes, MaxBytes: c.opts.MaxBytes}
}
