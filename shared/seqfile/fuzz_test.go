package seqfile

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzReader feeds arbitrary bytes to the Reader. It must not panic, hang or
// allocate without bound, and every error must be corruption, an
// unsupported feature, or neither (never a crash). The seed corpus in
// testdata/fuzz/FuzzReader holds Hadoop's codec files; the shared test data
// and Writer output are added here too.
func FuzzReader(f *testing.F) {
	for _, data := range smallFiles(f) {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := NewReader(bytes.NewReader(data), "fuzz")
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnsupported) {
				t.Fatalf("NewReader: unexpected error kind: %v", err)
			}
			return
		}
		for r.Next() {
			_, _ = r.Key(), r.Value()
		}
		if err := r.Err(); err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Next: unexpected error kind: %v", err)
		}
	})
}
