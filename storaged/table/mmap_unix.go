//go:build unix

package table

import (
	"fmt"
	"os"
	"syscall"
)

// mapFile maps the first size bytes of f read-only; size > 0. populate
// asks for every page at once (where the system can), cheaper than a
// fault per page for a walk of the whole file.
func mapFile(f *os.File, size int64, populate bool) ([]byte, error) {
	if int64(int(size)) != size {
		return nil, fmt.Errorf("mapping %s: %d bytes", f.Name(), size)
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED|populateFlag(populate))
	if err != nil {
		return nil, fmt.Errorf("mapping %s: %w", f.Name(), err)
	}
	return b, nil
}

func unmapFile(b []byte) error { return syscall.Munmap(b) }
