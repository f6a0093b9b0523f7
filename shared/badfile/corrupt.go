package badfile

import "fmt"

// Error says which file is bad, at which byte offset, and why, so that an
// operator can look at the bytes. Each format names it with a type alias
// (seqfile.CorruptError, sparkey.CorruptError) and builds it with New.
type Error struct {
	// File is the name the reader was given.
	File string
	// Offset is the byte offset in the file of what could not be read:
	// the record or block, or the header field.
	Offset int64
	// Reason describes what is wrong.
	Reason string
	// Err is the underlying cause, if any (a decompressor's error,
	// io.ErrUnexpectedEOF for truncation, ...).
	Err error

	// format starts the message ("seqfile"); kind is the format's
	// sentinel, which errors.Is matches.
	format string
	kind   error
}

// New returns an Error of the format (its name and its sentinel kind).
func New(format string, kind error, file string, off int64, reason string, err error) *Error {
	return &Error{File: file, Offset: off, Reason: reason, Err: err, format: format, kind: kind}
}

// Error implements error.
func (e *Error) Error() string {
	s := fmt.Sprintf("%s: %s: corrupt at byte %d: %s", e.format, e.File, e.Offset, e.Reason)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Is reports whether target is the format's sentinel, so that
// errors.Is(err, seqfile.ErrCorrupt) holds for every seqfile error.
func (e *Error) Is(target error) bool { return e.kind != nil && target == e.kind }

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }
