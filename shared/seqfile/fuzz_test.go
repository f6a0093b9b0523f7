package seqfile

import (
	"errors"
	"slices"
	"testing"
)

// FuzzReader feeds arbitrary bytes to the Reader. It must not panic, hang or
// allocate without bound, and every error must be corruption, an
// unsupported feature, or neither (never a crash). Read through a
// Chunker, in chunks of a size the input picks, the same bytes give the
// same records and the same kind of error. The seed corpus in
// testdata/fuzz/FuzzReader holds Hadoop's codec files; the shared test data
// and Writer output are added here too.
func FuzzReader(f *testing.F) {
	for _, data := range smallFiles(f) {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, recs, err := readAll(t, data, "fuzz")
		if err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnsupported) {
			t.Fatalf("unexpected error kind: %v", err)
		}
		size := 1
		if len(data) > 0 {
			size += int(data[len(data)-1]) * 7
		}
		chunked, cerr := readChunked(t, data, []int{size, 1 + size/3})
		if (cerr == nil) != (err == nil) || errors.Is(cerr, ErrCorrupt) != errors.Is(err, ErrCorrupt) ||
			errors.Is(cerr, ErrUnsupported) != errors.Is(err, ErrUnsupported) {
			t.Fatalf("read in chunks of %d: error %v, through io.Reader %v", size, cerr, err)
		}
		if !slices.Equal(chunked, recs) {
			t.Fatalf("read in chunks of %d: %d records, %d through io.Reader", size, len(chunked), len(recs))
		}
	})
}
