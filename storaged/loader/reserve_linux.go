package loader

import (
	"os"
	"syscall"
)

// reserve allocates n bytes of disk for f before it is written: on ext4,
// writing into reserved space costs about half the kernel's CPU of
// allocating as it goes (see table's preallocFile). Errors are ignored:
// the writes then allocate.
func reserve(f *os.File, n int64) {
	if n > 0 {
		syscall.Fallocate(int(f.Fd()), 0, 0, n)
	}
}
