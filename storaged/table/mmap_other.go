//go:build !unix

package table

import (
	"fmt"
	"io"
	"os"
)

// mapFile reads the first size bytes of f: without mmap, a copy in memory.
func mapFile(f *os.File, size int64, _ bool) ([]byte, error) {
	b := make([]byte, size)
	if _, err := io.ReadFull(io.NewSectionReader(f, 0, size), b); err != nil {
		return nil, fmt.Errorf("reading %s: %w", f.Name(), err)
	}
	return b, nil
}

func unmapFile([]byte) error { return nil }

func dropMapped([]byte) {}
