package sparkey

import (
	"errors"
	"fmt"
)

// ErrCorrupt matches, with errors.Is, every error that says a log or
// index is malformed, truncated, or does not belong to its log: bad input,
// as opposed to an I/O failure.
var ErrCorrupt = errors.New("sparkey: corrupt file")

// CorruptError names the bad file, the byte offset of what could not be
// read, and why. For a compressed log the offset is that of the block
// holding the entry. It matches ErrCorrupt.
type CorruptError struct {
	File   string
	Offset int64
	Reason string
	Err    error
}

// Error implements error.
func (e *CorruptError) Error() string {
	s := fmt.Sprintf("sparkey: %s: corrupt at byte %d: %s", e.File, e.Offset, e.Reason)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Is makes errors.Is(err, ErrCorrupt) hold.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// Unwrap returns the cause.
func (e *CorruptError) Unwrap() error { return e.Err }

func corrupt(file string, off int64, err error, format string, args ...any) error {
	return &CorruptError{File: file, Offset: off, Reason: fmt.Sprintf(format, args...), Err: err}
}
