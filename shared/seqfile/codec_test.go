package seqfile

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"io"
	"testing"
)

// TestDeflateCompressors checks the one compressor behind DefaultCodec and
// GzipCodec: each call appends one complete stream of its own framing to
// dst, which the standard library's reader of that framing decodes, and a
// reused compressor (the writer reset, not made again) writes the same.
func TestDeflateCompressors(t *testing.T) {
	inputs := [][]byte{
		[]byte("spangle serves what Hadoop wrote"),
		bytes.Repeat([]byte("key value "), 5000),
		{},
	}
	for _, tc := range []struct {
		codec  string
		magic  []byte
		reader func(io.Reader) (io.Reader, error)
	}{
		{DefaultCodec, []byte{0x78}, func(r io.Reader) (io.Reader, error) { return zlib.NewReader(r) }},
		{GzipCodec, []byte{0x1f, 0x8b}, func(r io.Reader) (io.Reader, error) { return gzip.NewReader(r) }},
	} {
		c, err := newCompressor(tc.codec)
		if err != nil {
			t.Fatalf("%s: %v", tc.codec, err)
		}
		prefix := []byte("kept")
		for round := range 2 { // the second round reuses the writer
			for _, in := range inputs {
				out, err := c.compress(append([]byte(nil), prefix...), in)
				if err != nil {
					t.Fatalf("%s round %d: compress: %v", tc.codec, round, err)
				}
				if !bytes.HasPrefix(out, prefix) {
					t.Fatalf("%s round %d: dst's bytes not kept: %q", tc.codec, round, out[:min(len(out), 8)])
				}
				stream := out[len(prefix):]
				if !bytes.HasPrefix(stream, tc.magic) {
					t.Fatalf("%s round %d: stream starts %x, want %x", tc.codec, round, stream[:min(len(stream), 2)], tc.magic)
				}
				r, err := tc.reader(bytes.NewReader(stream))
				if err != nil {
					t.Fatalf("%s round %d: reader: %v", tc.codec, round, err)
				}
				got, err := io.ReadAll(r)
				if err != nil {
					t.Fatalf("%s round %d: decoding: %v", tc.codec, round, err)
				}
				if !bytes.Equal(got, in) {
					t.Fatalf("%s round %d: decoded %d bytes, want %d", tc.codec, round, len(got), len(in))
				}
			}
		}
	}
}
