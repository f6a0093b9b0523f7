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
// same records and the same kind of error, and so does a Reader that
// decodes into Buffers another file left. The seed corpus in
// testdata/fuzz/FuzzReader holds Hadoop's codec files; the shared test data
// and Writer output are added here too.
func FuzzReader(f *testing.F) {
	files := smallFiles(f)
	for _, data := range files {
		f.Add(data)
	}
	handedOn := files["writer/block-snappy"]
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
		// Decoded into buffers another file grew and left garbage in,
		// the same bytes give the same again.
		var b Buffers
		if _, err := readWith(t, handedOn, readBufferSize, &b); err != nil {
			t.Fatal(err)
		}
		scribble(&b)
		with, werr := readWith(t, data, size, &b)
		if (werr == nil) != (err == nil) || errors.Is(werr, ErrCorrupt) != errors.Is(err, ErrCorrupt) {
			t.Fatalf("read into handed-on buffers: error %v, into its own %v", werr, err)
		}
		if !slices.Equal(with, recs) {
			t.Fatalf("read into handed-on buffers: %d records, %d into its own", len(with), len(recs))
		}
	})
}
