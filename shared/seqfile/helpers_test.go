package seqfile

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// testdataDir returns the shared test data directory, ../shared/testdata
// beside the repository root (the directory holding go.mod). It fails the
// test when the directory is missing: the tests must not pass vacuously.
func testdataDir(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatalf("getwd: %v", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			td := filepath.Join(dir, "..", "shared", "testdata")
			if fi, err := os.Stat(td); err != nil || !fi.IsDir() {
				t.Fatalf("test data not found: expected %s (the shared test data beside the repository root %s)", td, dir)
			}
			return td
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("test data not found: no go.mod above the working directory, so ../shared/testdata cannot be located")
		}
		dir = parent
	}
}

// readTestFile reads a file under the shared test data directory.
func readTestFile(t testing.TB, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testdataDir(t), filepath.FromSlash(rel)))
	if err != nil {
		t.Fatalf("reading test data: %v", err)
	}
	return b
}

type record struct{ key, value string }

// readAll reads every record of data and returns them with Err.
func readAll(t testing.TB, data []byte, name string) (Header, []record, error) {
	t.Helper()
	r, err := NewReader(bytes.NewReader(data), name)
	if err != nil {
		return Header{}, nil, err
	}
	var recs []record
	for r.Next() {
		recs = append(recs, record{string(r.Key()), string(r.Value())})
	}
	return r.Header(), recs, r.Err()
}

// writeAll writes recs with opts and returns the file.
func writeAll(t testing.TB, opts WriterOptions, recs []record) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, opts)
	if err != nil {
		t.Fatalf("NewWriter(%+v): %v", opts, err)
	}
	for _, rec := range recs {
		if err := w.Append([]byte(rec.key), []byte(rec.value)); err != nil {
			t.Fatalf("Append: %v", err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return buf.Bytes()
}

// writeKinds lists every compression and codec the Writer produces.
var writeKinds = []struct {
	name  string
	comp  Compression
	codec string
}{
	{"none", None, ""},
	{"record-zlib", Record, DefaultCodec},
	{"record-gzip", Record, GzipCodec},
	{"record-snappy", Record, SnappyCodec},
	{"record-zstd", Record, ZStandardCodec},
	{"block-zlib", Block, DefaultCodec},
	{"block-gzip", Block, GzipCodec},
	{"block-snappy", Block, SnappyCodec},
	{"block-zstd", Block, ZStandardCodec},
}
