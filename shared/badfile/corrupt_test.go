package badfile

import (
	"errors"
	"fmt"
	"io"
	"testing"
)

func TestErrorMatchesItsFormatOnly(t *testing.T) {
	errA, errB := errors.New("a: corrupt"), errors.New("b: corrupt")
	err := fmt.Errorf("loading: %w", New("a", errA, "part-00001", 42, "bad length", io.ErrUnexpectedEOF))
	if !errors.Is(err, errA) || errors.Is(err, errB) || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("errors.Is: a %v, b %v, cause %v", errors.Is(err, errA), errors.Is(err, errB), errors.Is(err, io.ErrUnexpectedEOF))
	}
	var e *Error
	if !errors.As(err, &e) || e.File != "part-00001" || e.Offset != 42 {
		t.Fatalf("errors.As: %+v", e)
	}
	if got, want := err.Error(), "loading: a: part-00001: corrupt at byte 42: bad length: unexpected EOF"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if got := New("b", errB, "f", 0, "short", nil).Error(); got != "b: f: corrupt at byte 0: short" {
		t.Errorf("without a cause: %q", got)
	}
}
