package table

import (
	"os"
	"syscall"
)

// reserve allocates disk space for n bytes of f from off, extending its
// size (fallocate mode 0).
func reserve(f *os.File, off, n int64) error {
	return syscall.Fallocate(int(f.Fd()), 0, off, n)
}
