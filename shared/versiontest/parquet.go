package versiontest

import (
	"os"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"spangle/shared/parquetkv"
)

// parquetSchema is the two columns the loader reads without a _FORMAT
// marker.
var parquetSchema = arrow.NewSchema([]arrow.Field{
	{Name: "key", Type: arrow.BinaryTypes.String},
	{Name: "value", Type: arrow.BinaryTypes.Binary},
}, nil)

// writeParquet writes the records as one row group of Snappy pages.
func writeParquet(path string, fill func(put func(k, v []byte) error) error) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	w, err := pqarrow.NewFileWriter(parquetSchema, f, parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy)), pqarrow.DefaultWriterProps())
	if err != nil {
		return 0, err
	}
	b := array.NewRecordBuilder(memory.NewGoAllocator(), parquetSchema)
	defer b.Release()
	keys, values := b.Field(0).(*array.StringBuilder), b.Field(1).(*array.BinaryBuilder)
	if err := fill(func(k, v []byte) error {
		keys.Append(string(k))
		values.Append(v)
		return nil
	}); err != nil {
		return 0, err
	}
	rec := b.NewRecordBatch()
	err = w.Write(rec)
	rec.Release()
	if err != nil {
		return 0, err
	}
	if err := w.Close(); err != nil {
		return 0, err
	}
	st, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// ReadParquet reads every row of the Parquet file at path as spec maps
// it, calling each with its key and value (valid only during the call),
// and fails t on any error.
func ReadParquet(t testing.TB, path string, spec parquetkv.Format, each func(key, value []byte)) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	r, err := parquetkv.NewReader(f, st.Size(), path, spec, parquetkv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for r.Next() {
		each(r.Key(), r.Value())
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
}
