package blockcache

import (
	"syscall"
	"unsafe"
)

// hugePage is the size of a transparent huge page on x86-64 and arm64.
const hugePage = 2 << 20

// mapChunk maps size bytes (a multiple of hugePage) of anonymous memory
// aligned to a huge page, and asks the kernel to back it with huge pages:
// blocks are read at random all over the cache, and with 4 KiB pages
// nearly every read would miss the TLB.
func mapChunk(size int) ([]byte, error) {
	mem, err := syscall.Mmap(-1, 0, size+hugePage, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, err
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(mem)))
	skip := int((hugePage - start%hugePage) % hugePage)
	// Give back the unaligned ends; they are never used.
	if skip > 0 {
		syscall.Munmap(mem[:skip:skip])
	}
	if tail := mem[skip+size:]; len(tail) > 0 {
		syscall.Munmap(tail)
	}
	chunk := mem[skip : skip+size : skip+size]
	// Only advice: where huge pages are off, the chunk works as it is.
	syscall.Madvise(chunk, syscall.MADV_HUGEPAGE)
	return chunk, nil
}
