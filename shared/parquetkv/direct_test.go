package parquetkv

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
)

// readBoth reads data with direct columns, in batches of rows and a row
// at a time, and with every leaf through arrow-go's record reader, and
// fails unless all give the same records, or all fail. It returns how
// many records were read.
func readBoth(t *testing.T, name string, data []byte, f Format) int {
	t.Helper()
	read := func(noDirect, noBatch bool) ([]record, error) {
		r, err := NewReader(bytes.NewReader(data), int64(len(data)), name, f, Options{BatchRows: 100, noDirect: noDirect, noBatch: noBatch})
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
	direct, derr := read(false, false)
	single, serr := read(false, true)
	arrow, aerr := read(true, false)
	if (derr == nil) != (aerr == nil) || (serr == nil) != (aerr == nil) {
		t.Fatalf("%s: direct columns: %v; a row at a time: %v; arrow-go: %v", name, derr, serr, aerr)
	}
	if derr != nil && derr.Error() != serr.Error() {
		t.Fatalf("%s: direct columns in batches: %v; a row at a time: %v", name, derr, serr)
	}
	if len(direct) != len(arrow) || len(single) != len(arrow) {
		t.Fatalf("%s: %d records direct, %d a row at a time, %d through arrow-go", name, len(direct), len(single), len(arrow))
	}
	for i := range direct {
		if direct[i] != arrow[i] || single[i] != arrow[i] {
			t.Fatalf("%s: record %d:\ndirect   %q\nsingle   %q\narrow-go %q", name, i, direct[i], single[i], arrow[i])
		}
	}
	return len(direct)
}

// TestDirectSameAsArrow: every test file, as JSON rows and with each
// column as the key, prints the same through direct columns as through
// arrow-go's arrays.
func TestDirectSameAsArrow(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.parquet")
	for _, path := range files {
		data := testFile(t, filepath.Base(path))
		readBoth(t, path, data, Format{Duplicates: DuplicatesFirst})
		r, err := NewReader(bytes.NewReader(data), int64(len(data)), path, Format{Duplicates: DuplicatesFirst}, Options{})
		if err != nil {
			continue
		}
		asc, err := r.fr.Schema()
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, fl := range asc.Fields() {
			readBoth(t, path, data, Format{KeyColumn: fl.Name, Duplicates: DuplicatesFirst})
			readBoth(t, path, data, Format{KeyColumn: fl.Name, ValueColumn: fl.Name, Duplicates: DuplicatesFirst})
		}
	}
}

// TestDirectWritten writes every type a direct column reads, nullable
// and not, with lists of every shape, in small pages (so a list's
// elements span pages), several row groups, both page versions, and with
// and without dictionaries, and checks the direct columns print what
// arrow-go's arrays print.
func TestDirectWritten(t *testing.T) {
	fields := []arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "i8", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
		{Name: "i16", Type: arrow.PrimitiveTypes.Int16},
		{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "u8", Type: arrow.PrimitiveTypes.Uint8},
		{Name: "u16", Type: arrow.PrimitiveTypes.Uint16, Nullable: true},
		{Name: "u32", Type: arrow.PrimitiveTypes.Uint32},
		{Name: "u64", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
		{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "f64", Type: arrow.PrimitiveTypes.Float64},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "bin", Type: arrow.BinaryTypes.Binary},
		{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "ms", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}},
		{Name: "us", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
		{Name: "ns", Type: &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}},
		{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
		{Name: "nums", Type: arrow.ListOfNonNullable(arrow.PrimitiveTypes.Int64)},
		{Name: "fl", Type: arrow.ListOf(arrow.PrimitiveTypes.Float64), Nullable: true},
		{Name: "u32s", Type: arrow.ListOf(arrow.PrimitiveTypes.Uint32)},
		{Name: "st", Type: arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int32, Nullable: true})},
	}
	sc := arrow.NewSchema(fields, nil)
	const rows = 2000
	floats := []float64{0, -0.0, 1.5, math.NaN(), math.Inf(1), math.Inf(-1), 1e21, 1e-7, 123456.789, math.MaxFloat64, math.SmallestNonzeroFloat64}
	fill := func(b *array.RecordBuilder, batch int) {
		for i := batch * 500; i < (batch+1)*500; i++ {
			null := i%7 == 3
			b.Field(0).(*array.Int64Builder).Append(int64(i))
			if null {
				for _, k := range []int{1, 3, 5, 7, 8, 10, 11, 13, 15, 17, 19} {
					b.Field(k).AppendNull()
				}
			} else {
				b.Field(1).(*array.Int8Builder).Append(int8(i))
				b.Field(3).(*array.Int32Builder).Append(int32(i * -7919))
				b.Field(5).(*array.Uint16Builder).Append(uint16(i * 31))
				b.Field(7).(*array.Uint64Builder).Append(math.MaxUint64 - uint64(i))
				b.Field(8).(*array.Float32Builder).Append(float32(floats[i%len(floats)]) / 3)
				b.Field(10).(*array.BooleanBuilder).Append(i%2 == 0)
				b.Field(11).(*array.StringBuilder).Append(fmt.Sprintf("s\"%d\\\n\x01é", i%13))
				b.Field(13).(*array.Date32Builder).Append(arrow.Date32(i*37 - 30000))
				b.Field(15).(*array.TimestampBuilder).Append(arrow.Timestamp(int64(i) * 1_000_003_007))
				lb := b.Field(17).(*array.ListBuilder)
				lb.Append(true)
				for k := 0; k < i%5; k++ {
					if k == 2 {
						lb.ValueBuilder().AppendNull()
					} else {
						lb.ValueBuilder().(*array.StringBuilder).Append(fmt.Sprint("t", i+k))
					}
				}
				fb := b.Field(19).(*array.ListBuilder)
				fb.Append(true)
				fb.ValueBuilder().(*array.Float64Builder).Append(floats[(i+1)%len(floats)])
			}
			b.Field(2).(*array.Int16Builder).Append(int16(-i))
			b.Field(4).(*array.Uint8Builder).Append(uint8(i))
			b.Field(6).(*array.Uint32Builder).Append(math.MaxUint32 - uint32(i))
			b.Field(9).(*array.Float64Builder).Append(floats[i%len(floats)] * float64(i))
			b.Field(12).(*array.BinaryBuilder).Append([]byte{byte(i), 0, 0xff})
			b.Field(14).(*array.TimestampBuilder).Append(arrow.Timestamp(int64(i)*86_400_123 - 62_000_000_000_000))
			b.Field(16).(*array.TimestampBuilder).Append(arrow.Timestamp(int64(i) * 123_456_789_123))
			nb := b.Field(18).(*array.ListBuilder)
			nb.Append(true)
			for k := 0; k < (i*3)%70; k++ { // long lists span small pages
				nb.ValueBuilder().(*array.Int64Builder).Append(int64(i*k - 5))
			}
			ub := b.Field(20).(*array.ListBuilder)
			if i%11 == 0 {
				ub.AppendEmptyValue()
			} else {
				ub.Append(true)
				ub.ValueBuilder().(*array.Uint32Builder).Append(uint32(i) * 3_000_000)
			}
			sb := b.Field(21).(*array.StructBuilder)
			sb.Append(true)
			sb.FieldBuilder(0).(*array.Int32Builder).Append(int32(i))
		}
	}
	for _, c := range []struct {
		name  string
		props []parquet.WriterProperty
	}{
		{"v1 plain", []parquet.WriterProperty{parquet.WithDictionaryDefault(false), parquet.WithDataPageSize(256), parquet.WithMaxRowGroupLength(700)}},
		{"v1 dict snappy", []parquet.WriterProperty{parquet.WithCompression(compress.Codecs.Snappy), parquet.WithDataPageSize(512), parquet.WithMaxRowGroupLength(900)}},
		{"v2 dict", []parquet.WriterProperty{parquet.WithDataPageVersion(parquet.DataPageV2), parquet.WithDataPageSize(300), parquet.WithMaxRowGroupLength(1000)}},
		{"v2 plain zstd", []parquet.WriterProperty{parquet.WithDataPageVersion(parquet.DataPageV2), parquet.WithDictionaryDefault(false), parquet.WithCompression(compress.Codecs.Zstd), parquet.WithBatchSize(64)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			data := writeParquet(t, sc, rows/500, fill, c.props...)
			if n := readBoth(t, "direct.parquet", data, Format{KeyColumn: "id", Duplicates: DuplicatesError}); n != rows {
				t.Fatalf("%d rows", n)
			}
			readBoth(t, "direct.parquet", data, Format{KeyColumn: "id", Columns: []string{"id", "u64", "tags"}, Duplicates: DuplicatesError})
			// Every field direct: rows formatted in batches.
			readBoth(t, "direct.parquet", data, Format{KeyColumn: "id", ExcludeColumns: []string{"st"}, Duplicates: DuplicatesError})
			readBoth(t, "direct.parquet", data, Format{KeyColumn: "s", ExcludeColumns: []string{"st"}, Duplicates: DuplicatesFirst})
			for _, k := range []string{"i8", "i16", "u8", "u16", "u32", "u64", "s", "bin"} {
				readBoth(t, "direct.parquet", data, Format{KeyColumn: k, Duplicates: DuplicatesFirst})
			}
			readBoth(t, "direct.parquet", data, Format{KeyColumn: "i32", ValueColumn: "bin", Duplicates: DuplicatesFirst})
			readBoth(t, "direct.parquet", data, Format{KeyColumn: "bin", ValueColumn: "s", Duplicates: DuplicatesFirst})
		})
	}
}

// TestDirectTimestamps: the direct columns' timestamps print as time's
// RFC 3339 with nanoseconds does, at the ends of each unit's range too.
func TestDirectTimestamps(t *testing.T) {
	for _, v := range []int64{0, -1, 1, math.MinInt64, math.MaxInt64, 253402300799999, -62135596800000, 1700000000123} {
		for _, unit := range []arrow.TimeUnit{arrow.Millisecond, arrow.Microsecond, arrow.Nanosecond} {
			want := appendTime(nil, arrow.Timestamp(v).ToTime(unit), time.RFC3339Nano)
			c := &directColumn{kind: dkTimestamp, unit: unit, i64: []int64{v}}
			if got := c.appendItem(nil, 0); !bytes.Equal(got, want) {
				t.Errorf("%d %s: %s, want %s", v, unit, got, want)
			}
		}
	}
}

// TestFastFormats: the float and timestamp printers print what strconv
// and time print, over random values and the edges of their fast paths.
func TestFastFormats(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	floats := []float64{1e-4, 1e-4 * (1 - 1e-16), 0.00011, 999999.9999, 1e6, 1e6 - 1e-10, 0.1, 0.2, 0.3, 1, 2, 100, 123456.7891, 5e-5, 0.5, 1.0000000000000002}
	for i := 0; i < 200000; i++ {
		k := rng.IntN(8)
		v := float64(rng.Int64N(1e11)) / math.Pow(10, float64(k))
		floats = append(floats, v, -v, rng.Float64(), rng.NormFloat64()*1e5, math.Round(rng.Float64()*1e6)/100)
	}
	for _, f := range floats {
		got := appendFloat(nil, f, 64)
		if want := strconv.AppendFloat(nil, f, 'g', -1, 64); !bytes.Equal(got, want) {
			t.Fatalf("%v: %s, want %s", f, got, want)
		}
	}
	units := []arrow.TimeUnit{arrow.Second, arrow.Millisecond, arrow.Microsecond, arrow.Nanosecond}
	edges := []int64{0, -1, 1, math.MinInt64, math.MaxInt64, -62135596800, -62135596801, 253402300799, 253402300800, 951782400, 951868800}
	for i := 0; i < 200000; i++ {
		edges = append(edges, rng.Int64(), rng.Int64N(1<<45)-1<<44, rng.Int64N(4e11)-2e11)
	}
	for _, v := range edges {
		for _, unit := range units {
			got := appendTimestamp(nil, v, unit)
			if want := appendTime(nil, arrow.Timestamp(v).ToTime(unit), time.RFC3339Nano); !bytes.Equal(got, want) {
				t.Fatalf("%d %s: %s, want %s", v, unit, got, want)
			}
		}
	}
}

// TestJSONValueBounded: a row whose JSON passes the bound fails the file
// instead of growing without limit, through direct columns and arrow-go.
func TestJSONValueBounded(t *testing.T) {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String)},
	}, nil)
	data := writeParquet(t, sc, 1, func(b *array.RecordBuilder, _ int) {
		for i := 0; i < 3; i++ {
			b.Field(0).(*array.Int64Builder).Append(int64(i))
			lb := b.Field(1).(*array.ListBuilder)
			lb.Append(true)
			for k := 0; k < 1+i*5000; k++ { // row 2: 10001 elements, over 40 KB of JSON
				lb.ValueBuilder().(*array.StringBuilder).Append("same")
			}
		}
	})
	for _, noDirect := range []bool{false, true} {
		r, err := NewReader(bytes.NewReader(data), int64(len(data)), "big.parquet", Format{KeyColumn: "id", Duplicates: DuplicatesError},
			Options{maxJSON: 40 << 10, noDirect: noDirect})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for r.Next() {
			n++
		}
		r.Close()
		if n != 2 {
			t.Errorf("noDirect %v: %d rows before the error, want 2", noDirect, n)
		}
		wantErr(t, r.Err(), "big.parquet", "row 2", "JSON value passes 40960 bytes")
	}
}

// TestBatchesBoundedAndSame: rows of long strings and lists are cut into
// batches by their bytes, or formatted alone, and print as a row at a
// time prints them; with a lower row bound, both stop at the same row
// with the same error.
func TestBatchesBoundedAndSame(t *testing.T) {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String)},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	const rows = 3000
	data := writeParquet(t, sc, 3, func(b *array.RecordBuilder, batch int) {
		for i := batch * 1000; i < (batch+1)*1000; i++ {
			b.Field(0).(*array.Int64Builder).Append(int64(i))
			switch {
			case i%97 == 5:
				b.Field(1).AppendNull()
			case i%500 == 7:
				b.Field(1).(*array.StringBuilder).Append(strings.Repeat("\x01", 60<<10+i)) // 6 bytes each
			default:
				b.Field(1).(*array.StringBuilder).Append(strings.Repeat("x", i%300))
			}
			lb := b.Field(2).(*array.ListBuilder)
			lb.Append(true)
			n := i % 4
			if i%700 == 3 {
				n = 3000 + i // spans levels windows
			}
			for k := 0; k < n; k++ {
				lb.ValueBuilder().(*array.StringBuilder).Append(fmt.Sprint("t", k))
			}
			b.Field(3).(*array.Float64Builder).Append(float64(i) / 7)
		}
	}, parquet.WithDataPageSize(64<<10), parquet.WithMaxRowGroupLength(1300))
	if n := readBoth(t, "batches.parquet", data, Format{KeyColumn: "id", Duplicates: DuplicatesError}); n != rows {
		t.Fatalf("%d rows", n)
	}
	for _, limit := range []int{400 << 10, 200 << 10, 20 << 10} {
		var got [2][]record
		var errs [2]error
		for k, noBatch := range []bool{false, true} {
			r, err := NewReader(bytes.NewReader(data), int64(len(data)), "batches.parquet", Format{KeyColumn: "id", Duplicates: DuplicatesError},
				Options{maxJSON: limit, noBatch: noBatch})
			if err != nil {
				t.Fatal(err)
			}
			for r.Next() {
				got[k] = append(got[k], record{string(r.Key()), string(r.Value())})
			}
			errs[k] = r.Err()
			r.Close()
		}
		if len(got[0]) != len(got[1]) || fmt.Sprint(errs[0]) != fmt.Sprint(errs[1]) {
			t.Fatalf("limit %d: batches %d rows, %v; a row at a time %d rows, %v", limit, len(got[0]), errs[0], len(got[1]), errs[1])
		}
		for i := range got[0] {
			if got[0][i] != got[1][i] {
				t.Fatalf("limit %d: row %d differs", limit, i)
			}
		}
		if limit < 300<<10 && errs[0] == nil {
			t.Errorf("limit %d: no error", limit)
		}
	}
}

// TestFloatColumnShortTries: a double column's batch stops trying short
// decimals after shortTries values in a row that are not, and prints
// every value as appendFloat does whichever way it goes: runs of short
// decimals after long values, the reverse, alternation, NaN, the
// infinities, zeros and nulls.
func TestFloatColumnShortTries(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var vals []float64
	short := func() float64 { return math.Round(rng.Float64()*1e6) / 100 }
	for i := 0; i < 3*shortTries; i++ {
		vals = append(vals, rng.Float64())
	}
	for i := 0; i < 2*shortTries; i++ {
		vals = append(vals, short())
	}
	for i := 0; i < 4*shortTries; i++ {
		if i%2 == 0 {
			vals = append(vals, short())
		} else {
			vals = append(vals, -rng.NormFloat64()*1e9)
		}
	}
	for i := 0; i < shortTries+3; i++ {
		vals = append(vals, math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), 1e-300)
	}
	for i := 0; i < 500; i++ {
		vals = append(vals, short(), -short(), float64(rng.IntN(1000)))
	}
	f := field{quoted: []byte(`,"f":`)}
	copy(f.quoted16[:], f.quoted)
	c := &directColumn{kind: dkFloat64, f64: vals}
	for _, nullEvery := range []int{0, 7} {
		var vi []int32
		for k := range vals {
			if nullEvery > 0 && k%nullEvery == 3 {
				vi = append(vi, -1)
			}
			vi = append(vi, int32(k))
		}
		for _, batch := range []int{len(vi), 100, 17} {
			for start := 0; start < len(vi); start += batch {
				part := vi[start:min(start+batch, len(vi))]
				rows := make([][]byte, len(part))
				c.flatRows(rows, &f, part)
				for i, k := range part {
					want := `,"f":null`
					if k >= 0 {
						want = `,"f":` + string(appendFloat(nil, vals[k], 64))
					}
					if string(rows[i]) != want {
						t.Fatalf("nulls %d, batch %d, row %d: %s, want %s", nullEvery, batch, start+i, rows[i], want)
					}
				}
			}
		}
	}
}

// TestTimestampDateCache: timestamps printed through a column's date
// cache, found there or not, and with slots shared by days 1024 apart,
// print as time's RFC 3339 with nanoseconds does.
func TestTimestampDateCache(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	units := []arrow.TimeUnit{arrow.Second, arrow.Millisecond, arrow.Microsecond, arrow.Nanosecond}
	perDay := map[arrow.TimeUnit]int64{arrow.Second: 86400, arrow.Millisecond: 86400e3, arrow.Microsecond: 86400e6, arrow.Nanosecond: 86400e9}
	for _, unit := range units {
		dc := new(dateCache)
		base := int64(19723) * perDay[unit] // 2024-01-01
		for i := 0; i < 100000; i++ {
			var v int64
			switch i % 4 {
			case 0: // within three years: mostly found in the cache
				v = base + rng.Int64N(3*365*perDay[unit])
			case 1: // the same slot, 1024 days on or back
				v = base + rng.Int64N(perDay[unit]) + int64(rng.IntN(5)-2)*dateCacheSize*perDay[unit]
			case 2: // anywhere, before 1970 too
				v = rng.Int64N(1<<45) - 1<<44
			default: // fractions with trailing zeros
				v = base + rng.Int64N(365)*perDay[unit] + rng.Int64N(1000)*perDay[unit]/86400/1000*int64(rng.IntN(3))
			}
			want := appendTime(nil, arrow.Timestamp(v).ToTime(unit), time.RFC3339Nano)
			for k := 0; k < 2; k++ {
				if got := appendTimestampIn(nil, v, unit, dc); !bytes.Equal(got, want) {
					t.Fatalf("%d %s (print %d): %s, want %s", v, unit, k, got, want)
				}
			}
		}
	}
}
