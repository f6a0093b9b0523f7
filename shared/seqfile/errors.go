package seqfile

import (
	"errors"
	"fmt"
)

// ErrCorrupt matches, with errors.Is, every error that says a file is not a
// well-formed SequenceFile (bad magic, truncation, impossible length, bad
// sync marker, undecodable compressed data). Callers use it to tell bad
// input apart from I/O failures.
var ErrCorrupt = errors.New("seqfile: corrupt file")

// ErrNotSequenceFile is wrapped by the CorruptError returned when a file
// does not even start with the SequenceFile magic bytes, the usual sign that
// a directory holds some other kind of data.
var ErrNotSequenceFile = errors.New("seqfile: not a SequenceFile")

// ErrUnsupported is wrapped when a file or a WriterOptions asks for a
// version, codec or option this package does not implement. Such a file may
// be perfectly valid, so it is not ErrCorrupt.
var ErrUnsupported = errors.New("seqfile: unsupported")

// CorruptError says which file is bad, at which byte offset, and why, so an
// operator can look at the bytes. It matches ErrCorrupt with errors.Is.
type CorruptError struct {
	// File is the name given to NewReader.
	File string
	// Offset is the byte offset in the file of the record or block, or of
	// the header field, that could not be read.
	Offset int64
	// Reason describes what is wrong.
	Reason string
	// Err is the underlying cause, if any (a decompressor's error,
	// io.ErrUnexpectedEOF for truncation, ErrNotSequenceFile).
	Err error
}

// Error implements error.
func (e *CorruptError) Error() string {
	s := fmt.Sprintf("seqfile: %s: corrupt at byte %d: %s", e.File, e.Offset, e.Reason)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Is reports whether target is ErrCorrupt, so errors.Is(err, ErrCorrupt)
// holds for every CorruptError.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// Unwrap returns the underlying cause.
func (e *CorruptError) Unwrap() error { return e.Err }
