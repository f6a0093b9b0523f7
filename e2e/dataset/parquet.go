package dataset

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// parquetSchema is a Parquet version's: the key, and the columns its
// JSON value is made of.
var parquetSchema = arrow.NewSchema([]arrow.Field{
	{Name: "key", Type: arrow.BinaryTypes.String},
	{Name: "value", Type: arrow.BinaryTypes.String},
	{Name: "n", Type: arrow.PrimitiveTypes.Int64},
	{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String)},
}, nil)

// ParquetFormat is the _FORMAT a Parquet db is written with: the key
// column, and the row's other columns served as one JSON object.
const ParquetFormat = "key_column = \"key\"\n"

// ParquetValue is what a Parquet db serves for key in version: the JSON
// object of the row's other columns, which names both.
func ParquetValue(version, key string) string {
	n, _ := strconv.Atoi(strings.TrimPrefix(key, "key-"))
	return fmt.Sprintf(`{"value":%q,"n":%d,"tags":[%q,"t%d"]}`, Value(version, key), n, version, n%7)
}

// writeParquetFiles writes a Parquet version as a Spark job does: the
// keys spread over the files round-robin (not by partition), Snappy, and
// the db's _FORMAT beside the version.
func writeParquetFiles(dir string, s Spec) error {
	for f := 0; f < s.Partitions; f++ {
		var keys []int
		for i := f; i < s.Keys; i += s.Partitions {
			keys = append(keys, i)
		}
		path := filepath.Join(dir, fmt.Sprintf("part-%05d-e2e-c000.snappy.parquet", f))
		if err := writeParquet(path, s.Version, keys); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(dir), "_FORMAT"), []byte(ParquetFormat), 0o644); err != nil {
		return fmt.Errorf("dataset: %w", err)
	}
	return nil
}

func writeParquet(path, version string, keys []int) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("dataset: %w", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("dataset: %w", cerr)
		}
	}()
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy), parquet.WithMaxRowGroupLength(4096))
	// The writer closes a sink that is an io.Closer; the file is closed
	// here, after the buffer is flushed.
	bw := bufio.NewWriter(f)
	w, err := pqarrow.NewFileWriter(parquetSchema, bw, props, pqarrow.DefaultWriterProps())
	if err != nil {
		return fmt.Errorf("dataset: %s: %w", path, err)
	}
	b := array.NewRecordBuilder(memory.NewGoAllocator(), parquetSchema)
	defer b.Release()
	for _, i := range keys {
		k := Key(i)
		b.Field(0).(*array.StringBuilder).Append(k)
		b.Field(1).(*array.StringBuilder).Append(Value(version, k))
		b.Field(2).(*array.Int64Builder).Append(int64(i))
		lb := b.Field(3).(*array.ListBuilder)
		lb.Append(true)
		lb.ValueBuilder().(*array.StringBuilder).Append(version)
		lb.ValueBuilder().(*array.StringBuilder).Append("t" + strconv.Itoa(i%7))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	if err := w.Write(rec); err != nil {
		return fmt.Errorf("dataset: %s: %w", path, err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("dataset: %s: %w", path, err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("dataset: %s: %w", path, err)
	}
	return nil
}

// writeParquetVersion writes a Parquet version as Write does: into a
// hidden directory beside it, renamed into place once whole.
func writeParquetVersion(root string, s Spec) (string, error) {
	dbDir := filepath.Join(root, s.DB)
	final := filepath.Join(dbDir, s.Version)
	if _, err := os.Stat(final); err == nil {
		return "", fmt.Errorf("dataset: %s exists", final)
	}
	if err := os.MkdirAll(dbDir, 0o755); err != nil {
		return "", fmt.Errorf("dataset: %w", err)
	}
	tmp, err := os.MkdirTemp(dbDir, ".tmp-"+s.Version+"-")
	if err != nil {
		return "", fmt.Errorf("dataset: %w", err)
	}
	if err := writeParquetFiles(tmp, s); err != nil {
		os.RemoveAll(tmp)
		return "", err
	}
	if err := os.Rename(tmp, final); err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("dataset: %w", err)
	}
	return final, nil
}
