package table

import "syscall"

func populateFlag(populate bool) int {
	if populate {
		return syscall.MAP_POPULATE
	}
	return 0
}
