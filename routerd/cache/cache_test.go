package cache

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func constFill(v string, calls *atomic.Int64) Fill[string] {
	return func(ctx context.Context) (string, bool, error) {
		calls.Add(1)
		return v, true, nil
	}
}

func TestHitMissAndVersionKeying(t *testing.T) {
	var hits, misses, calls atomic.Int64
	c := New(Options[string]{MaxBytes: 1 << 20, Size: func(s string) int { return len(s) },
		OnHit: func() { hits.Add(1) }, OnMiss: func() { misses.Add(1) }})
	ctx := context.Background()
	v, hit, err := c.Get(ctx, Key{"db", "v1", "k"}, constFill("old", &calls))
	if err != nil || hit || v != "old" {
		t.Fatalf("first get: %q %v %v", v, hit, err)
	}
	v, hit, _ = c.Get(ctx, Key{"db", "v1", "k"}, constFill("never", &calls))
	if !hit || v != "old" {
		t.Fatalf("second get: %q hit=%v", v, hit)
	}
	// Another version is another key: never the old value.
	v, hit, _ = c.Get(ctx, Key{"db", "v2", "k"}, constFill("new", &calls))
	if hit || v != "new" {
		t.Fatalf("new version: %q hit=%v", v, hit)
	}
	if hits.Load() != 1 || misses.Load() != 2 || calls.Load() != 2 {
		t.Fatalf("hits %d misses %d calls %d", hits.Load(), misses.Load(), calls.Load())
	}
}

func TestNotKeptAndErrorsNotCached(t *testing.T) {
	c := New(Options[string]{MaxBytes: 1 << 20})
	ctx := context.Background()
	var calls atomic.Int64
	noKeep := func(ctx context.Context) (string, bool, error) { calls.Add(1); return "x", false, nil }
	boom := errors.New("boom")
	fails := func(ctx context.Context) (string, bool, error) { calls.Add(1); return "", true, boom }
	c.Get(ctx, Key{"d", "v", "a"}, noKeep)
	c.Get(ctx, Key{"d", "v", "a"}, noKeep)
	if _, _, err := c.Get(ctx, Key{"d", "v", "b"}, fails); !errors.Is(err, boom) {
		t.Fatalf("err %v", err)
	}
	c.Get(ctx, Key{"d", "v", "b"}, fails)
	if calls.Load() != 4 {
		t.Fatalf("%d fills, want 4: nothing may be cached", calls.Load())
	}
}

func TestBoundedInBytes(t *testing.T) {
	const max = 10 << 10
	c := New(Options[[]byte]{MaxBytes: max, Size: func(b []byte) int { return len(b) }})
	ctx := context.Background()
	val := make([]byte, 1000)
	for i := 0; i < 100; i++ {
		k := Key{"d", "v", string(rune('a' + i))}
		c.Get(ctx, k, func(context.Context) ([]byte, bool, error) { return val, true, nil })
		if st := c.Stats(); st.Bytes > max {
			t.Fatalf("cache holds %d bytes, bound %d", st.Bytes, max)
		}
	}
	st := c.Stats()
	if st.Entries < 5 || st.Entries > 10 {
		t.Fatalf("%d entries of ~1 KiB in 10 KiB", st.Entries)
	}
	// A value larger than the whole cache is served but not kept.
	big := make([]byte, 2*max)
	v, _, _ := c.Get(ctx, Key{"d", "v", "big"}, func(context.Context) ([]byte, bool, error) { return big, true, nil })
	if len(v) != len(big) || c.Stats().Bytes > max {
		t.Fatal("oversized value mishandled")
	}
	// Replacing an entry keeps the count right.
	for i := 0; i < 3; i++ {
		c.add(Key{"d", "v", "same"}, val)
	}
	if st := c.Stats(); st.Bytes > max || st.Bytes <= 0 {
		t.Fatalf("bytes %d after replacing", st.Bytes)
	}
}

func TestSingleflight(t *testing.T) {
	var misses atomic.Int64
	c := New(Options[string]{MaxBytes: 1 << 20, OnMiss: func() { misses.Add(1) }})
	var calls atomic.Int64
	release := make(chan struct{})
	fill := func(ctx context.Context) (string, bool, error) {
		calls.Add(1)
		<-release
		return "v", true, nil
	}
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if v, _, err := c.Get(context.Background(), Key{"d", "v", "k"}, fill); err != nil || v != "v" {
				t.Errorf("%q %v", v, err)
			}
		}()
	}
	// Release the fill only once every caller has missed (then a moment
	// more to join the flight), however slowly the goroutines run.
	for misses.Load() < 50 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	close(release)
	wg.Wait()
	if calls.Load() != 1 {
		t.Fatalf("%d fills for 50 concurrent misses, want 1", calls.Load())
	}
}

func TestWaiterLeavesFillGoesOn(t *testing.T) {
	c := New(Options[string]{MaxBytes: 1 << 20})
	release := make(chan struct{})
	fillCtx := make(chan context.Context, 1)
	fill := func(ctx context.Context) (string, bool, error) {
		fillCtx <- ctx
		<-release
		return "v", true, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { _, _, err := c.Get(ctx, Key{"d", "v", "k"}, fill); done <- err }()
	fc := <-fillCtx
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	if fc.Err() != nil {
		t.Fatal("the fill was cancelled with its first waiter")
	}
	close(release)
	// The fill completes and its value is cached for the next caller.
	deadline := time.Now().Add(time.Second)
	for c.Stats().Entries == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if _, hit, _ := c.Get(context.Background(), Key{"d", "v", "k"}, fill); !hit {
		t.Fatal("value of the abandoned fill not cached")
	}
}

func TestDisabled(t *testing.T) {
	c := New(Options[string]{})
	var calls atomic.Int64
	for i := 0; i < 3; i++ {
		if _, hit, _ := c.Get(context.Background(), Key{"d", "v", "k"}, constFill("x", &calls)); hit {
			t.Fatal("hit with caching off")
		}
	}
	if calls.Load() != 3 || c.Enabled() || c.Stats().Entries != 0 {
		t.Fatal("disabled cache kept something")
	}
}

func TestCachedCountsOnlyHits(t *testing.T) {
	var hits, misses, calls atomic.Int64
	c := New(Options[string]{MaxBytes: 1 << 20, Size: func(s string) int { return len(s) },
		OnHit: func() { hits.Add(1) }, OnMiss: func() { misses.Add(1) }})
	k := Key{"db", "v1", "k"}
	if v, ok := c.Cached(k); ok || v != "" {
		t.Fatalf("empty cache: %q %v", v, ok)
	}
	if hits.Load() != 0 || misses.Load() != 0 {
		t.Fatalf("a missing Cached counted: hits %d misses %d", hits.Load(), misses.Load())
	}
	if _, _, err := c.Get(context.Background(), k, constFill("val", &calls)); err != nil {
		t.Fatal(err)
	}
	if v, ok := c.Cached(k); !ok || v != "val" {
		t.Fatalf("after fill: %q %v", v, ok)
	}
	if _, ok := c.Cached(Key{"db", "v2", "k"}); ok {
		t.Fatal("another version's key was cached")
	}
	if hits.Load() != 1 || misses.Load() != 1 || calls.Load() != 1 {
		t.Fatalf("hits %d misses %d calls %d", hits.Load(), misses.Load(), calls.Load())
	}
	off := New(Options[string]{})
	if _, ok := off.Cached(k); ok {
		t.Fatal("a disabled cache answered")
	}
}
