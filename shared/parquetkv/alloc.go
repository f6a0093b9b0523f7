package parquetkv

import (
	"math/bits"
	"sync"
)

// poolAlloc is a Reader's arrow-go allocator: buffers freed by a released
// batch or a closed column chunk are kept, by power-of-two size, for the
// next, which asks for the same sizes. With Go's allocator every batch's
// buffers were fresh heap memory that the collector then had to find and
// free, a fifth of a load's CPU. At most poolKeep bytes are kept by a
// Reader; a buffer is zeroed when handed out again, as fresh memory would
// be.
//
// What a Reader keeps goes to spare when it closes, and a Reader takes
// from spare what its own lists lack: a version's files are read one
// after another by a few goroutines, and a file of one row group frees
// its page buffers only as it ends, so without spare every file of a
// load allocated (and zeroed) its page buffers afresh.
type poolAlloc struct {
	mu   sync.Mutex
	free [poolClasses][][]byte
	kept int
}

const (
	poolMinShift = 6 // 64 bytes, arrow-go's alignment
	poolClasses  = 31 - poolMinShift
	poolKeep     = 32 << 20
)

// spare holds the buffers of closed Readers, by size class, for the
// Readers opened next. A sync.Pool holds what it is given until the
// second collection that finds it unused, so an idle process keeps
// none of it, and never more than its Readers had in use at once.
var spare [poolClasses]sync.Pool

// class returns the size class of a buffer of n bytes: 64 << class.
func class(n int) int {
	if n <= 1<<poolMinShift {
		return 0
	}
	return bits.Len(uint(n-1)) - poolMinShift
}

// Allocate implements memory.Allocator.
func (a *poolAlloc) Allocate(size int) []byte {
	c := class(size)
	if c >= poolClasses {
		return make([]byte, size)
	}
	a.mu.Lock()
	if l := a.free[c]; len(l) > 0 {
		b := l[len(l)-1]
		a.free[c] = l[:len(l)-1]
		a.kept -= cap(b)
		a.mu.Unlock()
		b = b[:size]
		clear(b)
		return b
	}
	a.mu.Unlock()
	if p, ok := spare[c].Get().(*[]byte); ok {
		b := (*p)[:size]
		clear(b)
		return b
	}
	// A power-of-two size class of Go's allocator is aligned to its size,
	// so the buffer is 64-byte aligned as arrow-go's own allocator makes
	// it.
	return make([]byte, size, 1<<(c+poolMinShift))
}

// Reallocate implements memory.Allocator.
func (a *poolAlloc) Reallocate(size int, b []byte) []byte {
	if size <= cap(b) {
		old := len(b)
		b = b[:size]
		if size > old {
			clear(b[old:])
		}
		return b
	}
	nb := a.Allocate(size)
	copy(nb, b)
	a.Free(b)
	return nb
}

// Free implements memory.Allocator.
func (a *poolAlloc) Free(b []byte) {
	n := cap(b)
	if n < 1<<poolMinShift || n&(n-1) != 0 {
		return // not one of ours
	}
	c := class(n)
	if c >= poolClasses {
		return
	}
	a.mu.Lock()
	if a.kept+n <= poolKeep {
		a.free[c] = append(a.free[c], b[:0])
		a.kept += n
		a.mu.Unlock()
		return
	}
	a.mu.Unlock()
	b = b[:0]
	spare[c].Put(&b)
}

// release gives what a is keeping to spare; a may still be used.
func (a *poolAlloc) release() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for c := range a.free {
		for _, b := range a.free[c] {
			spare[c].Put(&b)
		}
		a.free[c] = a.free[c][:0]
	}
	a.kept = 0
}
