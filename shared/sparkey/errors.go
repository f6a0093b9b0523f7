package sparkey

import (
	"errors"
	"fmt"

	"spangle/shared/badfile"
)

// ErrCorrupt matches, with errors.Is, every error that says a log or
// index is malformed, truncated, or does not belong to its log: bad input,
// as opposed to an I/O failure.
var ErrCorrupt = errors.New("sparkey: corrupt file")

// CorruptError names the bad file, the byte offset of what could not be
// read, and why. For a compressed log the offset is that of the block
// holding the entry. It matches ErrCorrupt.
type CorruptError = badfile.Error

func corrupt(file string, off int64, err error, format string, args ...any) error {
	return badfile.New("sparkey", ErrCorrupt, file, off, fmt.Sprintf(format, args...), err)
}
