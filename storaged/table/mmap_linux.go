package table

import "syscall"

func populateFlag(populate bool) int {
	if populate {
		return syscall.MAP_POPULATE
	}
	return 0
}

// dropMapped unmaps b's pages from the process (madvise DONTNEED; b is a
// page-aligned part of a shared file mapping): they stay in the page
// cache and fault back in if read again, but stop counting in the
// process's RSS. Advice only: an error changes nothing.
func dropMapped(b []byte) { _ = syscall.Madvise(b, syscall.MADV_DONTNEED) }
