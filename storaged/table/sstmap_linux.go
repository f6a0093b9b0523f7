//go:build linux

package table

import (
	"fmt"
	"math"
	"os"
	"syscall"
)

// mapTable maps size bytes of f read-only, for lookups that read their
// blocks where the page cache holds them. Lookups land at random, so the
// kernel is told not to read ahead of a page it faults in.
func mapTable(f *os.File, size uint64) ([]byte, error) {
	if size == 0 || size > math.MaxInt {
		return nil, fmt.Errorf("table of %d bytes not mapped", size)
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	// Only advice: without it the kernel reads ahead, which is all.
	syscall.Madvise(mem, syscall.MADV_RANDOM)
	return mem, nil
}

func unmapTable(mem []byte) error { return syscall.Munmap(mem) }
