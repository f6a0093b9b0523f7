//go:build !linux

package memtrim

// dropExecutable does nothing where /proc/self/smaps is not known.
func dropExecutable() (Result, error) { return Result{}, nil }
