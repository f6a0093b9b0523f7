//go:build !linux

package table

import (
	"errors"
	"os"
)

// reserve is not supported here: tables are written without it.
func reserve(*os.File, int64, int64) error {
	return errors.New("table: preallocation not supported")
}
