package seqfile

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// roundTripCases are record sets every writer kind must reproduce.
func roundTripCases() map[string][]record {
	allBytes := make([]byte, 256)
	for i := range allBytes {
		allBytes[i] = byte(i)
	}
	var binary []record
	for i := 0; i < 256; i++ {
		binary = append(binary, record{string(allBytes[i:]) + string(allBytes[:i]), string(allBytes[i : i+1])})
	}
	var many []record
	for i := 0; i < 5000; i++ {
		many = append(many, record{fmt.Sprintf("key-%06d", i), strings.Repeat("v", i%97)})
	}
	big := strings.Repeat("0123456789abcdef", 5000) // 80 KB, bigger than the test block size
	return map[string][]record{
		"none":          nil,
		"hadoop":        aliceBob,
		"empty values":  {{"a", ""}, {"b", ""}, {"c", ""}},
		"empty keys":    {{"", "x"}, {"", ""}, {"", "yy"}},
		"binary keys":   binary,
		"large values":  {{"small", "s"}, {"big", big}, {"big2", big + big}, {"tail", "t"}},
		"many records":  many,
		"one empty key": {{"", ""}},
	}
}

func TestRoundTrip(t *testing.T) {
	for _, kind := range writeKinds {
		for name, recs := range roundTripCases() {
			for _, class := range []string{BytesWritable, Text} {
				t.Run(fmt.Sprintf("%s/%s/%s", kind.name, name, class[strings.LastIndex(class, ".")+1:]), func(t *testing.T) {
					opts := WriterOptions{
						KeyClass: class, ValueClass: class,
						Compression: kind.comp, Codec: kind.codec,
						BlockSize: 64 << 10,
						Metadata:  map[string]string{"written-by": "spangle", "": "empty"},
					}
					data := writeAll(t, opts, recs)
					h, got, err := readAll(t, data, name)
					if err != nil {
						t.Fatalf("read: %v", err)
					}
					if !slices.Equal(got, recs) {
						t.Fatalf("read %d records, wrote %d; first difference at %d", len(got), len(recs), firstDiff(got, recs))
					}
					if h.KeyClass != class || h.ValueClass != class || h.Compression != kind.comp || h.Codec != kind.codec {
						t.Errorf("header %+v", h)
					}
					if len(h.Metadata) != 2 || h.Metadata["written-by"] != "spangle" || h.Metadata[""] != "empty" {
						t.Errorf("metadata %v", h.Metadata)
					}
				})
			}
		}
	}
}

func TestSyncMarkers(t *testing.T) {
	recs := roundTripCases()["many records"]
	for _, kind := range writeKinds {
		t.Run(kind.name, func(t *testing.T) {
			sync := [16]byte{0xde, 0xad, 0xbe, 0xef, 15: 1}
			data := writeAll(t, WriterOptions{Compression: kind.comp, Codec: kind.codec, Sync: sync, BlockSize: 8 << 10}, recs)
			marker := append([]byte{0xff, 0xff, 0xff, 0xff}, sync[:]...)
			n := bytes.Count(data, marker)
			if n < 5 {
				t.Errorf("%d sync markers in %d bytes, want several", n, len(data))
			}
			h, got, err := readAll(t, data, kind.name)
			if err != nil || !slices.Equal(got, recs) || h.Sync != sync {
				t.Errorf("read back: %d records, sync %x, err %v", len(got), h.Sync, err)
			}
			if kind.comp != Block {
				// Markers come roughly every SyncInterval bytes.
				if want := len(data) / (DefaultSyncInterval + 200); n < want {
					t.Errorf("%d sync markers, want at least %d", n, want)
				}
			}
		})
	}
}

func TestWriterDeterministic(t *testing.T) {
	opts := WriterOptions{Compression: Block, Codec: SnappyCodec, Sync: [16]byte{1}}
	a := writeAll(t, opts, aliceBob)
	b := writeAll(t, opts, aliceBob)
	if !bytes.Equal(a, b) {
		t.Error("same input and sync marker gave different files")
	}
	// Two writers without a fixed marker draw different ones.
	c := writeAll(t, WriterOptions{}, aliceBob)
	d := writeAll(t, WriterOptions{}, aliceBob)
	if bytes.Equal(c, d) {
		t.Error("random sync markers are equal")
	}
}

// TestMatchesHadoop checks that, given Hadoop's sync marker, the Writer
// produces Hadoop's files byte for byte where the codec is deterministic
// across implementations (zlib and gzip streams differ, validly).
func TestMatchesHadoop(t *testing.T) {
	tests := []struct {
		file  string
		comp  Compression
		codec string
	}{
		{"uncompressed", None, ""},
		{"record_compressed_snappy", Record, SnappyCodec},
		{"block_compressed_snappy", Block, SnappyCodec},
		{"record_compressed_zstd", Record, ZStandardCodec},
		{"block_compressed_zstd", Block, ZStandardCodec},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			want := readTestFile(t, "codecs/"+tt.file+".sequencefile")
			r, err := NewReader(bytes.NewReader(want), tt.file)
			if err != nil {
				t.Fatal(err)
			}
			got := writeAll(t, WriterOptions{Sync: r.Header().Sync, Compression: tt.comp, Codec: tt.codec}, aliceBob)
			if !bytes.Equal(got, want) {
				t.Errorf("writer output differs from Hadoop's:\n got % x\nwant % x", got, want)
			}
		})
	}
}

func TestRawWritableClass(t *testing.T) {
	// An IntWritable key is kept as its serialized bytes both ways.
	const intWritable = "org.apache.hadoop.io.IntWritable"
	recs := []record{{"\x00\x00\x00\x2a", "v"}}
	data := writeAll(t, WriterOptions{KeyClass: intWritable}, recs)
	h, got, err := readAll(t, data, "f")
	if err != nil || !slices.Equal(got, recs) || h.KeyClass != intWritable {
		t.Errorf("got %q %+v %v", got, h, err)
	}
}

func TestWriterErrors(t *testing.T) {
	var buf bytes.Buffer
	if _, err := NewWriter(&buf, WriterOptions{Compression: Block, Codec: BZip2Codec}); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "bzip2") {
		t.Errorf("bzip2 writer: %v", err)
	}
	if _, err := NewWriter(&buf, WriterOptions{Compression: Record, Codec: "com.example.Codec"}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("unknown codec: %v", err)
	}
	if _, err := NewWriter(&buf, WriterOptions{Compression: 7}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("bad compression: %v", err)
	}
	w, err := NewWriter(&buf, WriterOptions{Compression: Record})
	if err != nil {
		t.Fatal(err)
	}
	if w.Header().Codec != DefaultCodec {
		t.Errorf("default codec %q", w.Header().Codec)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Append([]byte("k"), nil); err == nil {
		t.Error("append after close succeeded")
	}
	fw, err := NewWriter(failWriter{}, WriterOptions{})
	if err != nil {
		t.Fatal(err) // buffered: the failure shows on Close
	}
	if err := fw.Close(); err == nil || !strings.HasPrefix(err.Error(), "seqfile: ") {
		t.Errorf("close on failing writer: %v", err)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("no space") }

func firstDiff(a, b []record) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
