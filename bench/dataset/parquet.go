package dataset

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"spangle/shared/partitioner"
)

// parquetBatch is how many rows are written at once.
const parquetBatch = 64 << 10

// kvSchema is FormatParquet's: a string key and a binary value, the
// columns a db without _FORMAT reads.
var kvSchema = arrow.NewSchema([]arrow.Field{
	{Name: "key", Type: arrow.BinaryTypes.String},
	{Name: "value", Type: arrow.BinaryTypes.Binary},
}, nil)

// featureSchema is FormatParquetFeatures': a key and eleven feature
// columns of the kinds a model's feature table holds.
var featureSchema = arrow.NewSchema([]arrow.Field{
	{Name: "key", Type: arrow.BinaryTypes.String},
	{Name: "user_id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "age", Type: arrow.PrimitiveTypes.Int32},
	{Name: "visits", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "score", Type: arrow.PrimitiveTypes.Float64},
	{Name: "ctr", Type: arrow.PrimitiveTypes.Float32},
	{Name: "spend", Type: arrow.PrimitiveTypes.Float64},
	{Name: "country", Type: arrow.BinaryTypes.String},
	{Name: "segment", Type: arrow.BinaryTypes.String},
	{Name: "device", Type: arrow.BinaryTypes.String},
	{Name: "last_seen", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String)},
}, nil)

// featureFormat is the _FORMAT of a features dataset: the key, and the
// other columns as JSON.
const featureFormat = "key_column = \"key\"\n"

var (
	countries = [...]string{"US", "DE", "FR", "JP", "BR", "IN", "GB", "CA"}
	segments  = [...]string{"new", "casual", "regular", "power", "churned"}
	devices   = [...]string{"ios", "android", "web", "tv"}
)

// writeParquet writes the keys of partition part, ascending, to path as
// Parquet in Snappy, as Spark writes it (row groups of up to 128 Ki rows,
// 1 MiB pages).
func writeParquet(ctx context.Context, path string, part int, o Options) (int64, error) {
	out, err := os.Create(path)
	if err != nil {
		return 0, fmt.Errorf("dataset: %w", err)
	}
	defer out.Close()
	bw := bufio.NewWriterSize(out, 1<<20)
	sc := kvSchema
	if o.Format == FormatParquetFeatures {
		sc = featureSchema
	}
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy),
		parquet.WithMaxRowGroupLength(128<<10), parquet.WithDictionaryDefault(false),
		parquet.WithDictionaryFor("country", true), parquet.WithDictionaryFor("segment", true), parquet.WithDictionaryFor("device", true))
	w, err := pqarrow.NewFileWriter(sc, bw, props, pqarrow.DefaultWriterProps())
	if err != nil {
		return 0, fmt.Errorf("dataset: %w", err)
	}
	b := array.NewRecordBuilder(memory.NewGoAllocator(), sc)
	defer b.Release()
	key := make([]byte, 0, 32)
	val := make([]byte, o.ValueSize)
	flush := func() error {
		rec := b.NewRecordBatch()
		defer rec.Release()
		if rec.NumRows() == 0 {
			return nil
		}
		return w.Write(rec)
	}
	rows := 0
	for i := 0; i < o.Keys; i++ {
		key = AppendKey(key[:0], i)
		if partitioner.Partition(key, o.Files) != part {
			continue
		}
		if i%65536 == 0 && ctx.Err() != nil {
			return 0, fmt.Errorf("dataset: %w", ctx.Err())
		}
		b.Field(0).(*array.StringBuilder).BinaryBuilder.Append(key)
		if o.Format == FormatParquetFeatures {
			appendFeatures(b, i)
		} else {
			fillValue(val, i)
			b.Field(1).(*array.BinaryBuilder).Append(val)
		}
		if rows++; rows%parquetBatch == 0 {
			if err := flush(); err != nil {
				return 0, fmt.Errorf("dataset: %s: %w", path, err)
			}
		}
	}
	if err := flush(); err != nil {
		return 0, fmt.Errorf("dataset: %s: %w", path, err)
	}
	if err := w.Close(); err != nil {
		return 0, fmt.Errorf("dataset: %s: %w", path, err)
	}
	if err := bw.Flush(); err != nil {
		return 0, fmt.Errorf("dataset: %w", err)
	}
	st, err := out.Stat()
	if err != nil {
		return 0, fmt.Errorf("dataset: %w", err)
	}
	return st.Size(), out.Close()
}

// featureEpoch is the base of last_seen.
var featureEpoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// appendFeatures appends key i's feature columns, drawn from a generator
// seeded by i.
func appendFeatures(b *array.RecordBuilder, i int) {
	rng := rand.New(rand.NewPCG(uint64(i), 0xfea7))
	b.Field(1).(*array.Int64Builder).Append(int64(i)*7919 + 1)
	b.Field(2).(*array.Int32Builder).Append(int32(18 + rng.IntN(70)))
	if rng.IntN(10) == 0 {
		b.Field(3).AppendNull()
	} else {
		b.Field(3).(*array.Int64Builder).Append(rng.Int64N(100000))
	}
	b.Field(4).(*array.Float64Builder).Append(rng.Float64())
	b.Field(5).(*array.Float32Builder).Append(float32(rng.Float64() / 10))
	b.Field(6).(*array.Float64Builder).Append(math.Round(rng.Float64()*1e6) / 100)
	b.Field(7).(*array.StringBuilder).Append(countries[rng.IntN(len(countries))])
	b.Field(8).(*array.StringBuilder).Append(segments[rng.IntN(len(segments))])
	b.Field(9).(*array.StringBuilder).Append(devices[rng.IntN(len(devices))])
	ts := featureEpoch.Add(time.Duration(rng.Int64N(int64(365 * 24 * time.Hour))))
	b.Field(10).(*array.TimestampBuilder).Append(arrow.Timestamp(ts.UnixMicro()))
	lb := b.Field(11).(*array.ListBuilder)
	lb.Append(true)
	vb := lb.ValueBuilder().(*array.StringBuilder)
	for t := rng.IntN(4); t >= 0; t-- {
		vb.Append("t" + strconv.Itoa(rng.IntN(50)))
	}
}

// writeFormatMarker writes the db's _FORMAT for a features dataset.
func writeFormatMarker(root string, o Options) error {
	if o.Format != FormatParquetFeatures {
		return nil
	}
	if err := os.WriteFile(filepath.Join(root, o.DB, "_FORMAT"), []byte(featureFormat), 0o644); err != nil {
		return fmt.Errorf("dataset: %w", err)
	}
	return nil
}
