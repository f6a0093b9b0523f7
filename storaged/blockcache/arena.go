package blockcache

import (
	"sync"
	"unsafe"
)

// arena hands out block buffers carved from memory mapped outside Go's
// heap, up to a bound, and takes them back for reuse. Go's collector lets
// the heap grow to about twice what is live before it collects; a cache
// on the heap would make a bound of C cost some 2C of memory. Carved
// memory is neither counted nor scanned by the collector, and never given
// back: once the cache is full, evicted buffers are what new blocks are
// read into. A cache is therefore made once and lives as long as its
// process, as the daemon's does.
//
// Every buffer it hands out has a capacity of one of bufferSize's
// classes, and the buffers taken back wait in a list per class. It is
// safe for concurrent use.
type arena struct {
	mu     sync.Mutex // guards all below
	chunks []chunkRange
	rest   []byte // what is left of the newest chunk
	mapped int64
	limit  int64
	free   map[int][][]byte // by capacity
	failed bool             // mmap failed once: carve nothing more
}

type chunkRange struct{ start, end uintptr }

// chunkSize is how much memory the arena maps at a time.
const chunkSize = 4 << 20

// newArena returns an arena that maps at most limit bytes.
func newArena(limit int64) *arena {
	return &arena{limit: limit, free: map[int][][]byte{}}
}

// get returns a buffer of length n (at most maxFreeBuffer), or nil when
// none is free and the arena has reached its bound: the caller then
// allocates on the heap.
func (a *arena) get(n int) []byte {
	size := bufferSize(n)
	a.mu.Lock()
	defer a.mu.Unlock()
	if l := a.free[size]; len(l) > 0 {
		b := l[len(l)-1]
		l[len(l)-1] = nil
		a.free[size] = l[:len(l)-1]
		return b[:n]
	}
	if len(a.rest) < size && !a.grow() {
		return a.bigger(n)
	}
	b := a.rest[:n:size]
	a.rest = a.rest[size:]
	return b
}

// bigger takes a free buffer of a larger class, the smallest there is, so
// that a block slightly larger than the rest still finds memory once the
// arena is full.
func (a *arena) bigger(n int) []byte {
	best := 0
	for size, l := range a.free {
		if size >= n && len(l) > 0 && (best == 0 || size < best) {
			best = size
		}
	}
	if best == 0 {
		return nil
	}
	l := a.free[best]
	b := l[len(l)-1]
	l[len(l)-1] = nil
	a.free[best] = l[:len(l)-1]
	return b[:n]
}

// grow maps a new chunk, within the bound. The rest of the old chunk, too
// small for the buffer asked for, is left unused.
func (a *arena) grow() bool {
	if a.failed || a.mapped+chunkSize > a.limit {
		return false
	}
	mem, err := mapChunk(chunkSize)
	if err != nil {
		a.failed = true
		return false
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(mem)))
	a.chunks = append(a.chunks, chunkRange{start, start + chunkSize})
	a.mapped += chunkSize
	a.rest = mem
	return true
}

// put takes back b if the arena handed it out, and reports whether it
// did; a buffer of the heap is left to the caller.
func (a *arena) put(b []byte) bool {
	if cap(b) == 0 {
		return false
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, c := range a.chunks {
		if p >= c.start && p < c.end {
			// Buffers are carved at multiples of 512 bytes from a chunk's
			// start, with such capacities: anything else is a slice of a
			// buffer, and keeping it would hand out memory twice.
			if (p-c.start)%512 != 0 || cap(b)%512 != 0 || p+uintptr(cap(b)) > c.end {
				return true // lost to the arena, but never reused wrongly
			}
			a.free[cap(b)] = append(a.free[cap(b)], b[:0])
			return true
		}
	}
	return false
}

// mappedBytes is how much memory the arena has mapped.
func (a *arena) mappedBytes() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.mapped
}
