//go:build !linux

package table

import (
	"errors"
	"os"
)

// mapTable maps nothing here: lookups read their blocks with ReadAt.
func mapTable(*os.File, uint64) ([]byte, error) {
	return nil, errors.New("table: no mmap on this system")
}

func unmapTable([]byte) error { return nil }
