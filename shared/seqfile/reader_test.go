package seqfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

var aliceBob = []record{{"Alice", "Practice"}, {"Bob", "Hope"}}

func TestHadoopCodecFiles(t *testing.T) {
	tests := []struct {
		file  string
		comp  Compression
		codec string
	}{
		{"uncompressed.sequencefile", None, ""},
		{"record_compressed_bzip2.sequencefile", Record, BZip2Codec},
		{"record_compressed_gzip.sequencefile", Record, GzipCodec},
		{"record_compressed_snappy.sequencefile", Record, SnappyCodec},
		{"record_compressed_zlib.sequencefile", Record, DefaultCodec},
		{"record_compressed_zstd.sequencefile", Record, ZStandardCodec},
		{"block_compressed_bzip2.sequencefile", Block, BZip2Codec},
		{"block_compressed_gzip.sequencefile", Block, GzipCodec},
		{"block_compressed_snappy.sequencefile", Block, SnappyCodec},
		{"block_compressed_zlib.sequencefile", Block, DefaultCodec},
		{"block_compressed_zstd.sequencefile", Block, ZStandardCodec},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			data := readTestFile(t, "codecs/"+tt.file)
			h, recs, err := readAll(t, data, tt.file)
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			if h.Version != 6 || h.KeyClass != BytesWritable || h.ValueClass != BytesWritable {
				t.Errorf("header = %+v", h)
			}
			if h.Compression != tt.comp || h.Codec != tt.codec {
				t.Errorf("compression %v codec %q, want %v %q", h.Compression, h.Codec, tt.comp, tt.codec)
			}
			if !slices.Equal(recs, aliceBob) {
				t.Errorf("records = %q, want %q", recs, aliceBob)
			}
		})
	}
}

func TestBabyNames(t *testing.T) {
	keyRE := regexp.MustCompile(`^\d{4}/(boy|girl)$`)
	total := 0
	for _, part := range []string{"00000", "00001", "00002", "00003", "00004"} {
		name := "healthy/baby-names/1/part-" + part
		_, recs, err := readAll(t, readTestFile(t, name), name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, rec := range recs {
			if !keyRE.MatchString(rec.key) || rec.value == "" {
				t.Errorf("%s: unexpected record %q", name, rec)
			}
		}
		total += len(recs)
	}
	if total != 64 {
		t.Errorf("read %d records, want 64", total)
	}
	_, recs, err := readAll(t, readTestFile(t, "healthy/test.sequencefile"), "test.sequencefile")
	if err != nil || !slices.Equal(recs, aliceBob) {
		t.Errorf("test.sequencefile: %q, %v", recs, err)
	}
}

func TestNotASequenceFile(t *testing.T) {
	const name = "unhealthy/baby-names-bad/1/part-00000"
	_, err := NewReader(bytes.NewReader(readTestFile(t, name)), name)
	if !errors.Is(err, ErrCorrupt) || !errors.Is(err, ErrNotSequenceFile) {
		t.Fatalf("err = %v, want ErrCorrupt and ErrNotSequenceFile", err)
	}
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.File != name || ce.Offset != 0 {
		t.Fatalf("err = %#v, want a CorruptError for %s at 0", err, name)
	}
	if !strings.HasPrefix(err.Error(), "seqfile: ") || !strings.Contains(err.Error(), name) {
		t.Errorf("message %q should start with seqfile: and name the file", err)
	}
}

func TestHeaderErrors(t *testing.T) {
	valid := readTestFile(t, "codecs/record_compressed_zlib.sequencefile")
	unknownCodec := bytes.Replace(valid, []byte("DefaultCodec"), []byte("DefaultCodeX"), 1)
	tests := []struct {
		name    string
		data    []byte
		corrupt bool
		unsupp  bool
	}{
		{"empty", nil, true, false},
		{"magic only", []byte("SEQ"), true, false},
		{"version 3", []byte("SEQ\x03"), false, true},
		{"version 7", []byte("SEQ\x07"), false, true},
		{"unknown codec", unknownCodec, false, true},
		{"bad flag", append(append([]byte{}, valid[:0x4a]...), 2), true, false},
		{"truncated codec name", valid[:0x6b], true, false},
		{"truncated sync", valid[:0x80], true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewReader(bytes.NewReader(tt.data), tt.name)
			if err == nil {
				t.Fatal("no error")
			}
			if errors.Is(err, ErrCorrupt) != tt.corrupt || errors.Is(err, ErrUnsupported) != tt.unsupp {
				t.Errorf("err = %v: corrupt %v unsupported %v, want %v %v", err,
					errors.Is(err, ErrCorrupt), errors.Is(err, ErrUnsupported), tt.corrupt, tt.unsupp)
			}
		})
	}
}

func TestIOErrorIsNotCorruption(t *testing.T) {
	data := readTestFile(t, "codecs/uncompressed.sequencefile")
	boom := errors.New("disk on fire")
	r, err := NewReader(io.MultiReader(bytes.NewReader(data[:120]), iotest.ErrReader(boom)), "f")
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
	}
	if !errors.Is(r.Err(), boom) || errors.Is(r.Err(), ErrCorrupt) {
		t.Fatalf("Err = %v, want the wrapped I/O error", r.Err())
	}
}

func TestOneByteReads(t *testing.T) {
	for _, f := range []string{"codecs/block_compressed_snappy.sequencefile", "codecs/record_compressed_gzip.sequencefile"} {
		r, err := NewReader(iotest.OneByteReader(bytes.NewReader(readTestFile(t, f))), f)
		if err != nil {
			t.Fatal(err)
		}
		var recs []record
		for r.Next() {
			recs = append(recs, record{string(r.Key()), string(r.Value())})
		}
		if r.Err() != nil || !slices.Equal(recs, aliceBob) {
			t.Errorf("%s: %q, %v", f, recs, r.Err())
		}
	}
}

func TestOffsets(t *testing.T) {
	data := readTestFile(t, "codecs/uncompressed.sequencefile")
	r, err := NewReader(bytes.NewReader(data), "f")
	if err != nil {
		t.Fatal(err)
	}
	var offs []int64
	for r.Next() {
		offs = append(offs, r.Offset())
	}
	// Header ends at 0x60; the first record is 8+9+12 bytes long.
	if want := []int64{0x60, 0x60 + 29}; !slices.Equal(offs, want) {
		t.Errorf("offsets %v, want %v", offs, want)
	}
}

// TestNoGoroutineLeak checks that Readers, which have no Close, leave no
// decoder goroutines behind.
func TestNoGoroutineLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	for _, f := range []string{"codecs/block_compressed_zstd.sequencefile", "codecs/record_compressed_zstd.sequencefile"} {
		data := readTestFile(t, f)
		for range 50 {
			if _, _, err := readAll(t, data, f); err != nil {
				t.Fatal(err)
			}
		}
	}
	if after := runtime.NumGoroutine(); after > before {
		t.Errorf("%d goroutines before reading, %d after", before, after)
	}
}

// TestRecordsAroundBufferSize reads records of every size near the input
// buffer's, where a record is read in place (it fits the buffer) or field
// by field (it does not), with small records between them so that each
// starts at a different place in the buffer.
func TestRecordsAroundBufferSize(t *testing.T) {
	var recs []record
	for d := -3; d <= 3; d++ {
		// A record's bytes after its 8 length bytes: the key's and the
		// value's, each with BytesWritable's 4-byte length.
		n := readBufferSize - 8 + d
		key := fmt.Sprintf("key%+d", d)
		recs = append(recs, record{"small" + key, "s"}, record{key, strings.Repeat("v", n-8-len(key))})
	}
	for _, kind := range writeKinds[:2] { // uncompressed, and values compressed one by one
		t.Run(kind.name, func(t *testing.T) {
			data := writeAll(t, WriterOptions{KeyClass: BytesWritable, ValueClass: BytesWritable, Compression: kind.comp, Codec: kind.codec}, recs)
			_, got, err := readAll(t, data, "f")
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, recs) {
				t.Fatalf("read %d records, wrote %d; first difference at %d", len(got), len(recs), firstDiff(got, recs))
			}
		})
	}
}
