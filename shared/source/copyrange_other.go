//go:build !linux

package source

import (
	"errors"
	"os"
)

func copyRange(in, out *os.File, n int) (int, error) { return 0, errors.ErrUnsupported }
