package parquetkv

import (
	"bytes"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
)

var kvSchema = arrow.NewSchema([]arrow.Field{
	{Name: "key", Type: arrow.BinaryTypes.String},
	{Name: "value", Type: arrow.BinaryTypes.Binary},
}, nil)

// kvFile writes n rows, key%08d -> a 100-byte value, in batches of 1000.
func kvFile(t testing.TB, n int, props ...parquet.WriterProperty) []byte {
	return writeParquet(t, kvSchema, (n+999)/1000, func(b *array.RecordBuilder, batch int) {
		for i := batch * 1000; i < min(n, (batch+1)*1000); i++ {
			b.Field(0).(*array.StringBuilder).Append(fmt.Sprintf("key%08d", i))
			b.Field(1).(*array.BinaryBuilder).Append(kvValue(i))
		}
	}, props...)
}

func kvValue(i int) []byte {
	v := bytes.Repeat([]byte{byte(i)}, 100)
	copy(v, fmt.Sprintf("v%d-", i))
	return v
}

// TestWrittenCodecsAndEncodings writes every codec, both data page
// versions, plain, dictionary and delta encodings, many row groups and
// small pages, and reads every record back with the default _FORMAT.
func TestWrittenCodecsAndEncodings(t *testing.T) {
	codecs := []compress.Compression{compress.Codecs.Uncompressed, compress.Codecs.Snappy, compress.Codecs.Gzip,
		compress.Codecs.Zstd, compress.Codecs.Lz4, compress.Codecs.Lz4Raw, compress.Codecs.Brotli}
	registerCodecs() // the writer needs the LZ4 codec too
	const n = 5000
	for _, codec := range codecs {
		for _, v2 := range []bool{false, true} {
			for _, enc := range []string{"dict", "plain", "delta"} {
				t.Run(fmt.Sprintf("%s/v2=%v/%s", codec, v2, enc), func(t *testing.T) {
					props := []parquet.WriterProperty{parquet.WithCompression(codec),
						parquet.WithMaxRowGroupLength(1500), parquet.WithDataPageSize(4 << 10)}
					if v2 {
						props = append(props, parquet.WithDataPageVersion(parquet.DataPageV2))
					}
					switch enc {
					case "plain":
						props = append(props, parquet.WithDictionaryDefault(false))
					case "delta":
						props = append(props, parquet.WithDictionaryDefault(false),
							parquet.WithEncodingFor("key", parquet.Encodings.DeltaByteArray),
							parquet.WithEncodingFor("value", parquet.Encodings.DeltaLengthByteArray))
					}
					recs, err := readAll(t, "kv", kvFile(t, n, props...), DefaultFormat())
					if err != nil {
						t.Fatal(err)
					}
					if len(recs) != n {
						t.Fatalf("%d records, want %d", len(recs), n)
					}
					for i, r := range recs {
						if r.key != fmt.Sprintf("key%08d", i) || r.value != string(kvValue(i)) {
							t.Fatalf("record %d: %q = %q", i, r.key, r.value)
						}
					}
				})
			}
		}
	}
}

// TestJSONTypes writes one row of every type the issue maps and checks
// the exact JSON.
func TestJSONTypes(t *testing.T) {
	dec := &arrow.Decimal128Type{Precision: 12, Scale: 3}
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "f64", Type: arrow.PrimitiveTypes.Float64},
		{Name: "f32", Type: arrow.PrimitiveTypes.Float32},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "bin", Type: arrow.BinaryTypes.Binary},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "d", Type: arrow.FixedWidthTypes.Date32},
		{Name: "dec", Type: dec},
		{Name: "list", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32)},
		{Name: "m", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64)},
		{Name: "st", Type: arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int32}, arrow.Field{Name: "y", Type: arrow.BinaryTypes.String, Nullable: true})},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean},
	}, nil)
	floats := []float64{1.5, math.NaN(), math.Inf(1), math.Inf(-1)}
	ts := time.Date(2024, 2, 29, 13, 14, 15, 123456000, time.UTC)
	data := writeParquet(t, sc, 1, func(b *array.RecordBuilder, _ int) {
		for i, f := range floats {
			b.Field(0).(*array.Int64Builder).Append(int64(i))
			if i == 1 {
				b.Field(1).AppendNull()
				b.Field(4).AppendNull()
			} else {
				b.Field(1).(*array.Int32Builder).Append(-7)
				b.Field(4).(*array.StringBuilder).Append("h\u00e9\"\n")
			}
			b.Field(2).(*array.Float64Builder).Append(f)
			b.Field(3).(*array.Float32Builder).Append(float32(f))
			b.Field(5).(*array.BinaryBuilder).Append([]byte{0, 1, 0xff})
			b.Field(6).(*array.TimestampBuilder).Append(arrow.Timestamp(ts.UnixMicro()))
			b.Field(7).(*array.Date32Builder).Append(arrow.Date32FromTime(ts))
			b.Field(8).(*array.Decimal128Builder).Append(decimal128.FromI64(-1234567))
			lb := b.Field(9).(*array.ListBuilder)
			lb.Append(true)
			lb.ValueBuilder().(*array.Int32Builder).AppendValues([]int32{1, 2}, nil)
			mb := b.Field(10).(*array.MapBuilder)
			mb.Append(true)
			mb.KeyBuilder().(*array.StringBuilder).Append("k")
			mb.ItemBuilder().(*array.Int64Builder).Append(9)
			sb := b.Field(11).(*array.StructBuilder)
			sb.Append(true)
			sb.FieldBuilder(0).(*array.Int32Builder).Append(3)
			sb.FieldBuilder(1).AppendNull()
			b.Field(12).(*array.BooleanBuilder).Append(i%2 == 0)
		}
	})
	recs, err := readAll(t, "types", data, Format{KeyColumn: "id", Duplicates: DuplicatesError})
	if err != nil {
		t.Fatal(err)
	}
	rest := `"bin":"AAH/","ts":"2024-02-29T13:14:15.123456Z","d":"2024-02-29","dec":"-1234.567","list":[1,2],"m":{"k":9},"st":{"x":3,"y":null}`
	want := []string{
		`{"i32":-7,"f64":1.5,"f32":1.5,"s":"hé\"\n",` + rest + `,"b":true}`,
		`{"i32":null,"f64":"NaN","f32":"NaN","s":null,` + rest + `,"b":false}`,
		`{"i32":-7,"f64":"Infinity","f32":"Infinity","s":"hé\"\n",` + rest + `,"b":true}`,
		`{"i32":-7,"f64":"-Infinity","f32":"-Infinity","s":"hé\"\n",` + rest + `,"b":false}`,
	}
	for i, r := range recs {
		if r.key != fmt.Sprint(i) || r.value != want[i] {
			t.Errorf("row %d: %s = %s\nwant %s", i, r.key, r.value, want[i])
		}
	}
	// columns and exclude_columns choose the fields, in the file's order.
	recs, err = readAll(t, "types", data, Format{KeyColumn: "id", Columns: []string{"b", "i32"}, Duplicates: DuplicatesError})
	if err != nil || recs[0].value != `{"i32":-7,"b":true}` {
		t.Errorf("columns: %v %v", recs, err)
	}
	recs, err = readAll(t, "types", data, Format{KeyColumn: "id", ExcludeColumns: []string{"f64", "f32", "s", "bin", "ts", "d", "dec", "list", "m", "st"}, Duplicates: DuplicatesError})
	if err != nil || recs[1].value != `{"i32":null,"b":false}` {
		t.Errorf("exclude_columns: %v %v", recs, err)
	}
}

// TestKeys covers integer keys as decimal text, nested keys by dotted
// path, and the key errors.
func TestKeys(t *testing.T) {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "u", Type: arrow.StructOf(arrow.Field{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}), Nullable: true},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64},
		{Name: "payload", Type: arrow.BinaryTypes.String},
		{Name: "l", Type: arrow.ListOf(arrow.BinaryTypes.String)},
	}, nil)
	file := func(nullAt int) []byte {
		return writeParquet(t, sc, 1, func(b *array.RecordBuilder, _ int) {
			for i := 0; i < 10; i++ {
				sb := b.Field(0).(*array.StructBuilder)
				switch i {
				case nullAt:
					sb.Append(true)
					sb.FieldBuilder(0).AppendNull()
				default:
					sb.Append(true)
					sb.FieldBuilder(0).(*array.Int64Builder).Append(int64(i) - 5)
				}
				b.Field(1).(*array.Float64Builder).Append(1)
				b.Field(2).(*array.StringBuilder).Append(fmt.Sprint("p", i))
				b.Field(3).(*array.ListBuilder).Append(true)
				b.Field(3).(*array.ListBuilder).ValueBuilder().(*array.StringBuilder).Append("x")
			}
		})
	}
	good := file(-1)
	recs, err := readAll(t, "keys", good, Format{KeyColumn: "u.id", ValueColumn: "payload", Duplicates: DuplicatesError})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 10 || recs[0] != (record{"-5", "p0"}) || recs[9] != (record{"4", "p9"}) {
		t.Fatalf("records %v", recs)
	}
	_, err = readAll(t, "nullkey.parquet", file(3), Format{KeyColumn: "u.id", ValueColumn: "payload", Duplicates: DuplicatesError})
	wantErr(t, err, "nullkey.parquet", "row 3", "null key")

	for _, c := range []struct {
		f     Format
		words []string
	}{
		{Format{KeyColumn: "f", ValueColumn: "payload"}, []string{"key column f is float64", "a key must be a string, binary or integer column"}},
		{Format{KeyColumn: "nope", ValueColumn: "payload"}, []string{`key column "nope" is not in the file`, "u, f, payload, l"}},
		{Format{KeyColumn: "u.nope", ValueColumn: "payload"}, []string{`key column "u.nope"`}},
		{Format{KeyColumn: "l", ValueColumn: "payload"}, []string{`key column "l"`}},
		{Format{KeyColumn: "payload", ValueColumn: "f"}, []string{"value column f is float64"}},
		{DefaultFormat(), []string{`key column "key" is not in the file`, "_FORMAT", "key_column"}},
	} {
		_, err := readAll(t, "bad.parquet", good, c.f)
		wantErr(t, err, append(c.words, "bad.parquet")...)
	}
}
