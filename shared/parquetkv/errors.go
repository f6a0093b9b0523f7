package parquetkv

import (
	"errors"
	"fmt"
	"io"
	"sync"
)

// ErrCorrupt matches, with errors.Is, every error that says a file cannot
// be served as the marker asks: a corrupt footer or page, a CRC mismatch,
// sizes that do not fit the file, a null key, a missing key column or one
// whose type cannot be a key. It is not an I/O error: reading again gives
// the same answer.
var ErrCorrupt = errors.New("parquetkv: bad Parquet input")

// FileError says which file is bad and why. It matches ErrCorrupt.
type FileError struct {
	// File is the name given to NewReader.
	File string
	// Reason says what is wrong, with the row group, column, page or row.
	Reason string
	// Err is the underlying cause, if any.
	Err error
}

// Error implements error.
func (e *FileError) Error() string {
	s := "parquetkv: " + e.File + ": " + e.Reason
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Is makes errors.Is(err, ErrCorrupt) hold.
func (e *FileError) Is(target error) bool { return target == ErrCorrupt }

// Unwrap returns the cause.
func (e *FileError) Unwrap() error { return e.Err }

// trackedReaderAt remembers the first error its ReaderAt returned other
// than io.EOF, so that an error arrow-go reports after a failed read is
// told apart from bad data: the first is worth a retry, the second not.
type trackedReaderAt struct {
	r  io.ReaderAt
	mu sync.Mutex // guards err
	// err is the first I/O error seen.
	err error
}

func (t *trackedReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := t.r.ReadAt(p, off)
	if err != nil && !errors.Is(err, io.EOF) {
		t.mu.Lock()
		if t.err == nil {
			t.err = err
		}
		t.mu.Unlock()
	}
	return n, err
}

func (t *trackedReaderAt) ioErr() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

// fail classifies err: an I/O error of the file if one happened, bad
// data otherwise.
func (r *Reader) fail(err error, format string, args ...any) error {
	reason := fmt.Sprintf(format, args...)
	if ioErr := r.ra.ioErr(); ioErr != nil {
		return fmt.Errorf("parquetkv: %s: %s: reading: %w", r.name, reason, ioErr)
	}
	return &FileError{File: r.name, Reason: reason, Err: err}
}
