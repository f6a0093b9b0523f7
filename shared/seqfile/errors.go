package seqfile

import (
	"errors"

	"spangle/shared/badfile"
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

// CorruptError says which file is bad, at which byte offset, and why
// (File is the name given to NewReader; Err, if any, a decompressor's
// error, io.ErrUnexpectedEOF for truncation, or ErrNotSequenceFile). It
// matches ErrCorrupt with errors.Is.
type CorruptError = badfile.Error
