package parquetkv

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/compress"
)

// FuzzParseFormat: any marker either parses to a Format that passes its
// own checks, or fails with ErrBadFormat; never a panic.
func FuzzParseFormat(f *testing.F) {
	for _, s := range []string{
		`key_column = "id"`,
		"key_column = \"user.id\"\nvalue_column = \"blob\"\ncontent_type = \"image/png\"\nduplicates = \"first\"\npartitions = 8\n",
		"key_column = \"id\"\ncolumns = [\"a\", \"b\"]\n",
		"key_column = \"id\"\nexclude_columns = [\"secret\"]\nduplicates = \"last\"\n",
		"key_column = \"id\"\nkey_column = \"id\"\n",
		"[x]\nkey_column = 1",
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fm, err := ParseFormat(data)
		if err != nil {
			if !errors.Is(err, ErrBadFormat) {
				t.Fatalf("error %v does not wrap ErrBadFormat", err)
			}
			return
		}
		if err := fm.check(); err != nil {
			t.Fatalf("parsed format fails its checks: %v", err)
		}
		if fm.KeyColumn == "" || fm.ValueContentType() == "" {
			t.Fatalf("parsed format %+v", fm)
		}
	})
}

// FuzzReader: any bytes either read as records or fail with ErrCorrupt
// naming the file; never a panic, never an I/O error from memory. The
// seeds are the small test files, a small written one, and the corpus in
// testdata/fuzz/FuzzReader; each input reads at most 5000 records.
func FuzzReader(f *testing.F) {
	// The small test files (under 8 KiB): a mutation of a large one costs
	// seconds under the fuzzer's instrumentation, and their pages are
	// covered by TestRealFiles.
	files, _ := filepath.Glob("testdata/*.parquet")
	for _, name := range files {
		if st, err := os.Stat(name); err != nil || st.Size() > 8<<10 {
			continue
		}
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add(kvFile(f, 50))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, fm := range []Format{DefaultFormat(), {Duplicates: DuplicatesError}} {
			// Pages of at most 1 MiB: a mutated header that claims the
			// most a page may hold costs arrow-go an allocation of that
			// size before the page fails, 64 MiB by default.
			r, err := NewReader(bytes.NewReader(data), int64(len(data)), "fuzz.parquet", fm, Options{BatchRows: 64, maxPage: 1 << 20})
			if err != nil {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("open: %v is not ErrCorrupt", err)
				}
				continue
			}
			for n := 0; n < 5000 && r.Next(); n++ {
			}
			if err := r.Err(); err != nil && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("read: %v is not ErrCorrupt", err)
			}
			r.Close()
		}
	})
}

// FuzzScanChunk: the page walk (our own Thrift reader) over any bytes
// either passes or fails with a *chunkError; it never panics, never reads
// outside the chunk, and stops. Seeds: the first column chunks of the
// test files, and committed ones in testdata/fuzz/FuzzScanChunk.
func FuzzScanChunk(f *testing.F) {
	for _, name := range []string{"alltypes_plain.parquet", "rle-dict-snappy-checksum.parquet", "datapage_v2.snappy.parquet"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data[4:min(len(data), 4+512)], int64(0))
	}
	f.Fuzz(func(t *testing.T, data []byte, values int64) {
		s := newPageScanner(boundedReaderAt{bytes.NewReader(data), int64(len(data))}, 0)
		codecs := []compress.Compression{compress.Codecs.Uncompressed, compress.Codecs.Snappy, compress.Codecs.Gzip, compress.Codecs.Zstd}
		err := s.scanChunk(0, int64(len(data)), values, codecs[uint64(values)%uint64(len(codecs))])
		var ce *chunkError
		if err != nil && !errors.As(err, &ce) {
			t.Fatalf("error %v (%T) is not a chunkError", err, err)
		}
	})
}

// boundedReaderAt fails a test that reads past size.
type boundedReaderAt struct {
	r    *bytes.Reader
	size int64
}

func (b boundedReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off > b.size {
		panic("read outside the chunk")
	}
	return b.r.ReadAt(p, off)
}
