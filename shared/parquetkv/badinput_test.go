package parquetkv

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/golang/snappy"
	"github.com/klauspost/compress/zstd"
)

// TestBadInput: every kind of broken file fails with the file's name
// and a reason, wrapping ErrCorrupt, and never panics.
func TestBadInput(t *testing.T) {
	good := kvFile(t, 3000, parquet.WithCompression(compress.Codecs.Snappy), parquet.WithMaxRowGroupLength(1000))
	footerLen := int(binary.LittleEndian.Uint32(good[len(good)-8:]))
	footerStart := len(good) - 8 - footerLen
	crcFile := testFile(t, "rle-dict-snappy-checksum.parquet")
	flipped := bytes.Clone(crcFile)
	flipped[27] ^= 0x40 // inside the body of the first page (bytes 23-32)
	cases := []struct {
		name  string
		data  []byte
		words []string
		f     Format
	}{
		{"empty", nil, []string{"too short"}, Format{}},
		{"not parquet", bytes.Repeat([]byte("x"), 100), []string{"footer"}, Format{}},
		{"truncated footer", good[:len(good)-20], []string{"footer"}, Format{}},
		{"footer cut in half", append(bytes.Clone(good[:footerStart+footerLen/2]), good[len(good)-8:]...), []string{"footer"}, Format{}},
		// The data of the first row groups is cut out: the footer's
		// offsets no longer fit the file.
		{"chunks past the end", append(append(bytes.Clone(good[:4]), good[footerStart-100:footerStart]...), good[footerStart:]...), []string{"does not fit"}, Format{}},
		{"flipped page byte under a CRC", flipped, []string{"CRC mismatch", "column long_field"},
			Format{KeyColumn: "long_field", ValueColumn: "binary_field", Duplicates: DuplicatesFirst}},
		{"page bytes zeroed", zeroRange(good, 4, footerStart/2), []string{"row group 0"}, Format{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.f.KeyColumn == "" {
				c.f = DefaultFormat()
			}
			_, err := readAll(t, c.name+".parquet", c.data, c.f)
			wantErr(t, err, append(c.words, c.name+".parquet")...)
		})
	}
}

func zeroRange(b []byte, from, to int) []byte {
	out := bytes.Clone(b)
	clear(out[from:to])
	return out
}

// TestCodecBombs: a page that decompresses to more than its header
// claims is refused by each bounded decoder before it allocates.
func TestCodecBombs(t *testing.T) {
	registerCodecs()
	big := bytes.Repeat([]byte("a"), 1<<20)
	zenc, _ := zstd.NewWriter(nil)
	hl := hadoopLZ4{}
	for _, c := range []struct {
		codec compress.Compression
		data  []byte
	}{
		{compress.Codecs.Snappy, snappy.Encode(nil, big)},
		{compress.Codecs.Zstd, zenc.EncodeAll(big, nil)},
		{compress.Codecs.Lz4, hl.Encode(nil, big)},
		{compress.Codecs.Gzip, mustCodec(t, compress.Codecs.Gzip).Encode(nil, big)},
		{compress.Codecs.Brotli, mustCodec(t, compress.Codecs.Brotli).Encode(nil, big)},
		{compress.Codecs.Lz4Raw, mustCodec(t, compress.Codecs.Lz4Raw).Encode(nil, big)},
	} {
		codec := mustCodec(t, c.codec)
		out, err := compress.Decode(codec, make([]byte, len(big)), c.data)
		if err != nil || !bytes.Equal(out, big) {
			t.Errorf("%s: round trip failed: %v", c.codec, err)
		}
		if _, err := compress.Decode(codec, make([]byte, 1000), c.data); err == nil {
			t.Errorf("%s: 1 MiB decoded into a 1000-byte claim", c.codec)
		}
	}
	// A snappy block whose length prefix claims 4 GiB.
	claim := binary.AppendUvarint(nil, 1<<32-1)
	if _, err := compress.Decode(mustCodec(t, compress.Codecs.Snappy), make([]byte, 10), claim); !errors.Is(err, errPageBomb) {
		t.Errorf("snappy 4 GiB claim: %v", err)
	}
}

func mustCodec(t *testing.T, c compress.Compression) compress.Codec {
	codec, err := compress.GetCodec(c)
	if err != nil {
		t.Fatal(err)
	}
	return codec
}

// failingReaderAt fails every read that touches [from, to).
type failingReaderAt struct {
	r        io.ReaderAt
	from, to int64
}

var errDisk = errors.New("disk on fire")

func (f failingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > f.from && off < f.to {
		return 0, errDisk
	}
	return f.r.ReadAt(p, off)
}

// TestIOErrorIsNotCorrupt: a read that fails is passed on as that I/O
// error, not as bad data, so the caller can retry.
func TestIOErrorIsNotCorrupt(t *testing.T) {
	good := kvFile(t, 3000)
	footerLen := int64(binary.LittleEndian.Uint32(good[len(good)-8:]))
	footer := int64(len(good)) - 8 - footerLen
	r, err := NewReader(failingReaderAt{bytes.NewReader(good), 10, footer}, int64(len(good)), "io.parquet", DefaultFormat(), Options{})
	if err != nil {
		t.Fatalf("footer at %d should read: %v", footer, err)
	}
	for r.Next() {
	}
	if err := r.Err(); !errors.Is(err, errDisk) || errors.Is(err, ErrCorrupt) {
		t.Fatalf("err %v: want the disk error, not ErrCorrupt", err)
	}
}

// TestBadInputList covers, in files, the list of bad input that
// TestBadInput and TestKeys do not: a page whose header claims far fewer
// uncompressed bytes than its data holds, for each bounded codec, and a
// key column of a type that cannot be a key (a float, a list, INT96). Each
// fails with the file's name and a reason, wrapping ErrCorrupt.
func TestBadInputList(t *testing.T) {
	for _, codec := range []compress.Compression{compress.Codecs.Snappy, compress.Codecs.Zstd, compress.Codecs.Gzip} {
		t.Run("page bigger than claimed/"+codec.String(), func(t *testing.T) {
			good := kvFile(t, 3000, parquet.WithCompression(codec), parquet.WithDictionaryDefault(false))
			pf, err := file.NewParquetReader(bytes.NewReader(good))
			if err != nil {
				t.Fatal(err)
			}
			cc, err := pf.MetaData().RowGroup(0).ColumnChunk(1)
			if err != nil {
				t.Fatal(err)
			}
			off := int(cc.DataPageOffset())
			// The page header starts with field 1 (type DATA_PAGE, 0) and
			// field 2, the uncompressed size, as compact-Thrift i32s.
			if good[off] != 0x15 || good[off+1] != 0x00 || good[off+2] != 0x15 {
				t.Fatalf("page header at %d starts % x", off, good[off:off+4])
			}
			at := off + 3
			n := 1
			for good[at+n-1]&0x80 != 0 {
				n++
			}
			bomb := bytes.Clone(good)
			// Claim 16 bytes, written in the same n bytes (a varint may
			// carry zero groups), so the rest of the header is unmoved.
			v := uint64(32) // zigzag(16)
			for i := 0; i < n; i++ {
				b := byte(v & 0x7f)
				v >>= 7
				if i < n-1 {
					b |= 0x80
				}
				bomb[at+i] = b
			}
			_, err = readAll(t, "bomb.parquet", bomb, DefaultFormat())
			wantErr(t, err, "bomb.parquet", "row group 0", "decompress")
		})
	}
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "f", Type: arrow.PrimitiveTypes.Float64},
		{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64)},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean},
		{Name: "payload", Type: arrow.BinaryTypes.Binary},
	}, nil)
	data := writeParquet(t, sc, 1, func(b *array.RecordBuilder, _ int) {
		for i := 0; i < 5; i++ {
			b.Field(0).(*array.Float64Builder).Append(float64(i))
			b.Field(1).(*array.ListBuilder).Append(true)
			b.Field(1).(*array.ListBuilder).ValueBuilder().(*array.Int64Builder).Append(int64(i))
			b.Field(2).(*array.BooleanBuilder).Append(i%2 == 0)
			b.Field(3).(*array.BinaryBuilder).Append([]byte{byte(i)})
		}
	})
	for _, c := range []struct {
		key   string
		words []string
	}{
		{"f", []string{"key column f is float64", "a key must be a string, binary or integer column"}},
		{"l", []string{`key column "l"`}},
		{"b", []string{"key column b is bool"}},
	} {
		_, err := readAll(t, "keytype.parquet", data, Format{KeyColumn: c.key, ValueColumn: "payload", Duplicates: DuplicatesError})
		wantErr(t, err, append(c.words, "keytype.parquet")...)
	}
	// Spark's INT96 timestamps cannot be keys either.
	_, err := readAll(t, "int96.parquet", testFile(t, "int96_from_spark.parquet"), Format{KeyColumn: "a", Duplicates: DuplicatesError})
	wantErr(t, err, "int96.parquet", "key column a", "a key must be a string, binary or integer column")
}
