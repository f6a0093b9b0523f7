package source

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// copyRange copies up to n bytes from in to out, each at its file
// offset, in the kernel (copy_file_range(2)). Both descriptors are held
// for the call (RawConn.Control), so a call given up on can never write
// into a descriptor number reused after Close. errors.ErrUnsupported
// means the kernel cannot copy between these files (another file system,
// an old kernel, a file system without it) and nothing was copied.
func copyRange(in, out *os.File, n int) (int, error) {
	ic, err := in.SyscallConn()
	if err != nil {
		return 0, err
	}
	oc, err := out.SyscallConn()
	if err != nil {
		return 0, err
	}
	var got int
	var cerr error
	err = ic.Control(func(ifd uintptr) {
		err := oc.Control(func(ofd uintptr) {
			for {
				got, cerr = unix.CopyFileRange(int(ifd), nil, int(ofd), nil, n, 0)
				if cerr != unix.EINTR {
					return
				}
			}
		})
		if cerr == nil {
			cerr = err
		}
	})
	if err == nil {
		err = cerr
	}
	switch {
	case errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EXDEV), errors.Is(err, unix.EINVAL),
		errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.EPERM), errors.Is(err, unix.EBADF):
		return 0, fmt.Errorf("%w: copy_file_range: %w", errors.ErrUnsupported, err)
	case err != nil:
		return 0, err
	}
	return got, nil
}
