package parquetkv

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// record is one key/value pair read from a file.
type record struct{ key, value string }

// readAll reads every record of data, or the error that stopped it.
func readAll(t testing.TB, name string, data []byte, f Format) ([]record, error) {
	t.Helper()
	r, err := NewReader(bytes.NewReader(data), int64(len(data)), name, f, Options{})
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out []record
	for r.Next() {
		out = append(out, record{string(r.Key()), string(r.Value())})
	}
	return out, r.Err()
}

func testFile(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// writeParquet writes the batches built by fill (called with a builder
// per batch, nbatch times) as one Parquet file with the given writer
// properties.
func writeParquet(t testing.TB, sc *arrow.Schema, nbatch int, fill func(b *array.RecordBuilder, batch int), props ...parquet.WriterProperty) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := writeParquetTo(&buf, sc, nbatch, fill, props...); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func writeParquetTo(w interface{ Write([]byte) (int, error) }, sc *arrow.Schema, nbatch int, fill func(b *array.RecordBuilder, batch int), props ...parquet.WriterProperty) error {
	mem := memory.NewGoAllocator()
	fw, err := pqarrow.NewFileWriter(sc, w, parquet.NewWriterProperties(props...), pqarrow.DefaultWriterProps())
	if err != nil {
		return err
	}
	b := array.NewRecordBuilder(mem, sc)
	defer b.Release()
	for i := 0; i < nbatch; i++ {
		fill(b, i)
		rec := b.NewRecordBatch()
		err := fw.Write(rec)
		rec.Release()
		if err != nil {
			return err
		}
	}
	return fw.Close()
}

// wantErr fails unless err wraps ErrCorrupt and says each of the words.
func wantErr(t testing.TB, err error, words ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want one saying %q", words)
	}
	if !errors.Is(err, ErrCorrupt) {
		t.Errorf("error %v does not wrap ErrCorrupt", err)
	}
	for _, w := range words {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
}
