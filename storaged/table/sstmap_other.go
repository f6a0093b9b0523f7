//go:build !linux

package table

import (
	"errors"
	"os"
)

// mapFile maps nothing here: lookups read their blocks with ReadAt.
func mapFile(*os.File, uint64) ([]byte, error) {
	return nil, errors.New("table: no mmap on this system")
}

func unmapFile([]byte) error { return nil }
