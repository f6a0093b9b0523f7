//go:build !linux

package source

import "os"

// dropCached does nothing where the kernel takes no such advice.
func dropCached(*os.File) {}
