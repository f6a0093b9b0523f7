package seqfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
)

// scribbleChunker hands out data in chunks of the sizes given in turn,
// each in the one buffer it owns, which it overwrites with junk before
// the next chunk: a Reader that kept a chunk's bytes past the next call
// reads junk.
type scribbleChunker struct {
	data  []byte
	sizes []int
	i     int
	buf   []byte
	err   error // after data, instead of io.EOF
}

func (c *scribbleChunker) Chunk() ([]byte, error) {
	for j := range c.buf {
		c.buf[j] = 0xa5
	}
	if len(c.data) == 0 {
		if c.err != nil {
			return nil, c.err
		}
		return nil, io.EOF
	}
	n := min(c.sizes[c.i%len(c.sizes)], len(c.data))
	c.i++
	c.buf = append(c.buf[:0], c.data[:n]...)
	c.data = c.data[n:]
	return c.buf, nil
}

// Read makes it an io.Reader too, which NewReader must not use.
func (c *scribbleChunker) Read([]byte) (int, error) {
	return 0, errors.New("read through Read, not Chunk")
}

// readChunked is readAll through a Chunker of the given chunk sizes.
func readChunked(t testing.TB, data []byte, sizes []int) ([]record, error) {
	t.Helper()
	r, err := NewReader(&scribbleChunker{data: data, sizes: sizes}, "chunked")
	if err != nil {
		return nil, err
	}
	var recs []record
	for r.Next() {
		recs = append(recs, record{string(r.Key()), string(r.Value())})
	}
	return recs, r.Err()
}

// TestChunker reads every small file through a Chunker whose chunks end
// anywhere (in a length, a key, a sync marker, a compressed block) and
// gets what reading it through io.Reader gets.
func TestChunker(t *testing.T) {
	sizeSets := [][]int{{1}, {3, 7}, {8}, {13, 1, 64}, {100}, {readBufferSize}, {1 << 20}}
	for name, data := range smallFiles(t) {
		_, want, wantErr := readAll(t, data, name)
		for _, sizes := range sizeSets {
			got, err := readChunked(t, data, sizes)
			if (err == nil) != (wantErr == nil) || errors.Is(err, ErrCorrupt) != errors.Is(wantErr, ErrCorrupt) {
				t.Errorf("%s, chunks %v: error %v, read through io.Reader %v", name, sizes, err, wantErr)
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s, chunks %v: %d records, %d through io.Reader; first difference at %d", name, sizes, len(got), len(want), firstDiff(got, want))
			}
		}
	}
}

// TestChunkerRecordsAroundBufferSize is TestRecordsAroundBufferSize
// through chunks that cut records anywhere.
func TestChunkerRecordsAroundBufferSize(t *testing.T) {
	var recs []record
	for d := -3; d <= 3; d++ {
		n := readBufferSize - 8 + d
		key := fmt.Sprintf("key%+d", d)
		recs = append(recs, record{"small" + key, "s"}, record{key, strings.Repeat("v", n-8-len(key))})
	}
	data := writeAll(t, WriterOptions{KeyClass: BytesWritable, ValueClass: BytesWritable}, recs)
	for _, sizes := range [][]int{{4096}, {readBufferSize - 1}, {readBufferSize + 1}, {1000, 70000}} {
		got, err := readChunked(t, data, sizes)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, recs) {
			t.Fatalf("chunks %v: read %d records, wrote %d; first difference at %d", sizes, len(got), len(recs), firstDiff(got, recs))
		}
	}
}

// TestChunkerError: a Chunker's error after some records is the Reader's,
// wrapped, not corruption.
func TestChunkerError(t *testing.T) {
	data := readTestFile(t, "codecs/uncompressed.sequencefile")
	boom := errors.New("disk on fire")
	r, err := NewReader(&scribbleChunker{data: data[:120], sizes: []int{50}, err: boom}, "f")
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
	}
	if !errors.Is(r.Err(), boom) || errors.Is(r.Err(), ErrCorrupt) {
		t.Fatalf("Err = %v, want the wrapped I/O error", r.Err())
	}
}

// An empty chunk without an error is a stuck input, not the end.
func TestChunkerNoProgress(t *testing.T) {
	data := readTestFile(t, "codecs/uncompressed.sequencefile")
	_, err := NewReader(&scribbleChunker{data: data, sizes: []int{0}}, "f")
	if !errors.Is(err, io.ErrNoProgress) {
		t.Fatalf("NewReader: %v, want io.ErrNoProgress", err)
	}
}

func BenchmarkChunkerVsReader(b *testing.B) {
	var recs []record
	for i := range 20000 {
		recs = append(recs, record{fmt.Sprintf("key-%08d", i), strings.Repeat("v", 100)})
	}
	data := writeAll(b, WriterOptions{KeyClass: BytesWritable, ValueClass: BytesWritable}, recs)
	b.Run("reader", func(b *testing.B) {
		for range b.N {
			r, _ := NewReader(bytes.NewReader(data), "f")
			for r.Next() {
			}
		}
		b.SetBytes(int64(len(data)))
	})
	b.Run("chunker", func(b *testing.B) {
		c := &scribbleChunker{sizes: []int{readBufferSize}}
		for range b.N {
			c.data, c.i = data, 0
			r, _ := NewReader(c, "f")
			for r.Next() {
			}
		}
		b.SetBytes(int64(len(data)))
	})
}
