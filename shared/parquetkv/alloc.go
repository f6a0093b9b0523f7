package parquetkv

import (
	"math/bits"
	"sync"
)

// poolAlloc is a Reader's arrow-go allocator: buffers freed by a released
// batch are kept, by power-of-two size, for the next batch, which asks
// for the same sizes. With Go's allocator every batch's buffers were
// fresh heap memory that the collector then had to find and free, a fifth
// of a load's CPU. At most poolKeep bytes are kept; a buffer is zeroed
// when handed out again, as fresh memory would be.
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
	}
	a.mu.Unlock()
}
