package seqfile

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// readWith reads every record of data through a Chunker of chunks of
// size, decoding into b, and releases the Reader.
func readWith(t testing.TB, data []byte, size int, b *Buffers) ([]record, error) {
	t.Helper()
	r, err := NewReaderWith(&scribbleChunker{data: data, sizes: []int{size}}, "with", b)
	if err != nil {
		return nil, err
	}
	defer r.Release()
	var recs []record
	for r.Next() {
		recs = append(recs, record{string(r.Key()), string(r.Value())})
	}
	return recs, r.Err()
}

// scribble fills every buffer of b to its capacity with garbage: what a
// Reader finds in Buffers another file left.
func scribble(b *Buffers) {
	for _, s := range [][]byte{b.scratch, b.rawKey, b.rawVal, b.plain, b.carry, b.blk[0], b.blk[1], b.blk[2], b.blk[3]} {
		s = s[:cap(s)]
		for i := range s {
			s[i] = 0xa5
		}
	}
}

// TestBuffersHandedOn: one Buffers read every small file, one after
// another, in any order and filled with garbage in between, gives each
// file's records and errors as a Reader of its own does.
func TestBuffersHandedOn(t *testing.T) {
	files := smallFiles(t)
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	reversed := slices.Clone(names)
	slices.Reverse(reversed)
	var b Buffers
	for _, order := range [][]string{names, reversed} {
		for _, name := range order {
			data := files[name]
			_, want, wantErr := readAll(t, data, name)
			for _, size := range []int{7, 100, readBufferSize} {
				scribble(&b)
				got, err := readWith(t, data, size, &b)
				if (err == nil) != (wantErr == nil) || errors.Is(err, ErrCorrupt) != errors.Is(wantErr, ErrCorrupt) {
					t.Errorf("%s, chunks of %d, handed-on buffers: error %v, own buffers %v", name, size, err, wantErr)
				}
				if !slices.Equal(got, want) {
					t.Errorf("%s, chunks of %d, handed-on buffers: %d records, own buffers %d", name, size, len(got), len(want))
				}
			}
		}
	}
}

// TestBuffersReused: the second of two block-compressed files decodes in
// the memory the first grew, and Release ends the Reader.
func TestBuffersReused(t *testing.T) {
	var recs []record
	for i := range 2000 {
		recs = append(recs, record{fmt.Sprintf("key-%06d", i), strings.Repeat("v", 100)})
	}
	data := writeAll(t, WriterOptions{Compression: Block, Codec: SnappyCodec}, recs)
	var b Buffers
	if got, err := readWith(t, data, readBufferSize, &b); err != nil || !slices.Equal(got, recs) {
		t.Fatalf("first file: %d records, %v", len(got), err)
	}
	if cap(b.blk[vals]) < 2000*100 {
		t.Fatalf("values buffer of %d bytes after a file of 200 kB of values: not handed back", cap(b.blk[vals]))
	}
	first := &b.blk[vals][:1][0]
	r, err := NewReaderWith(bytes.NewReader(data), "second", &b)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Next() {
		t.Fatalf("no record: %v", r.Err())
	}
	if &r.blk[vals][:1][0] != first {
		t.Error("the second Reader decoded into new memory, not the buffers handed on")
	}
	r.Release()
	if r.Next() || r.Key() != nil || r.Err() != nil {
		t.Errorf("after Release: Next true or key %q or error %v", r.Key(), r.Err())
	}
	if &b.blk[vals][:1][0] != first {
		t.Error("Release did not hand the buffers back")
	}
	r.Release() // again: nothing happens
	// A header that fails gives them back too.
	if _, err := NewReaderWith(bytes.NewReader([]byte("SEQ\x06garbage")), "bad", &b); err == nil {
		t.Fatal("garbage header read")
	}
	if &b.blk[vals][:1][0] != first {
		t.Error("a failed NewReaderWith lost the buffers")
	}
}
