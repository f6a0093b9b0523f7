//go:build !linux

package blockcache

import "syscall"

// mapChunk maps size bytes of anonymous memory.
func mapChunk(size int) ([]byte, error) {
	return syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
}
