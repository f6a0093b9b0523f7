package source

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
)

// chunker is seqfile.Chunker, which the local source's files implement.
type chunker interface {
	Chunk() ([]byte, error)
}

// readChunks reads c to its end through Chunk.
func readChunks(c chunker) ([]byte, error) {
	var all []byte
	for {
		b, err := c.Chunk()
		all = append(all, b...)
		if err != nil {
			return all, err
		}
	}
}

// A local data file read through Chunk gives its bytes in chunks of at
// most chunkSize and then io.EOF; one that shrank or grew since it was
// opened fails with ErrChanged, as Read does.
func TestLocalFileChunks(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	data := strings.Repeat("0123456789", chunkSize/4) // 2.5 chunks
	write(t, root+"/db/1/part-00000", data)
	src, err := Open(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	open := func() chunker {
		rc, err := src.Open(ctx, "db", "1", "part-00000")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rc.Close() })
		c, ok := rc.(chunker)
		if !ok {
			t.Fatalf("%T has no Chunk", rc)
		}
		return c
	}
	c := open()
	b, err := c.Chunk()
	if len(b) != chunkSize || err != nil {
		t.Fatalf("first chunk: %d bytes, %v", len(b), err)
	}
	first := bytes.Clone(b) // b is the file's buffer: the next chunk lands there
	rest, err := readChunks(c)
	if got := append(first, rest...); string(got) != data || err != io.EOF {
		t.Fatalf("read %d bytes of %d, %v; want all, io.EOF", len(got), len(data), err)
	}

	// Shrunk after the open: the chunk short of the size seen fails.
	c = open()
	if err := os.Truncate(root+"/db/1/part-00000", 100); err != nil {
		t.Fatal(err)
	}
	if got, err := readChunks(c); !errors.Is(err, ErrChanged) || len(got) != 100 {
		t.Fatalf("a file that shrank: %d bytes, %v; want 100, ErrChanged", len(got), err)
	}

	// Grown after the open: read to the size seen, then ErrChanged.
	c = open()
	f, err := os.OpenFile(root+"/db/1/part-00000", os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("more")
	f.Close()
	if got, err := readChunks(c); !errors.Is(err, ErrChanged) || len(got) != 100 {
		t.Fatalf("a file that grew: %d bytes, %v; want 100, ErrChanged", len(got), err)
	}
}
