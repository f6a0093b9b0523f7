package source

import (
	"os"

	"golang.org/x/sys/unix"
)

// dropCached tells the kernel that f's pages are not wanted again: a
// node reads a version's source file once, to build its tables, and
// keeping the file in the page cache would push out the tables it serves
// (a 100M-key version's source and tables are together more than most
// nodes' memory). Advice only: an error changes nothing.
func dropCached(f *os.File) {
	_ = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}
