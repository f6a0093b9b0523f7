package sparkey

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestTruncatedFilesFail(t *testing.T) {
	for _, comp := range []Compression{None, Snappy} {
		log, index := write(t, WriterOptions{Compression: comp, BlockSize: 128}, sortedOps(40, 10))
		for n := 0; n < len(log); n++ {
			_, err := readAll(log[:n], index)
			mustCorrupt(t, comp.String()+" log cut at "+itoa(n), err)
		}
		for n := 0; n < len(index); n++ {
			_, err := readAll(log, index[:n])
			mustCorrupt(t, comp.String()+" index cut at "+itoa(n), err)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestBadInput(t *testing.T) {
	log, index := write(t, WriterOptions{}, sortedOps(50, 10))
	otherLog, otherIndex := write(t, WriterOptions{}, sortedOps(50, 10))
	slog, sindex := write(t, WriterOptions{Compression: Snappy, BlockSize: 256}, sortedOps(200, 10))
	flip := func(b []byte, i int) []byte {
		c := bytes.Clone(b)
		c[i] ^= 0x40
		return c
	}
	// The byte offset of the first key in the uncompressed log: after the
	// header and the entry's two one-byte lengths.
	firstKey := LogHeaderSize + 2
	for _, c := range []struct {
		name       string
		log, index []byte
		file       string
	}{
		{"log magic", flip(log, 0), log, "test.spl"},
		{"index magic", log, frame(t, flip(unframe(t, index), 0)), "test.spi.sz"},
		{"index of another log", log, otherIndex, "test.spi.sz"},
		{"log of another index", otherLog, index, "test.spi.sz"},
		{"key changed", flip(log, firstKey), index, "test.spi.sz"},
		{"key length too large", flip(log, LogHeaderSize), index, "test.spl"},
		{"lengths that wrap", hugeLengths(log), index, "test.spl"},
		{"data end beyond file", log[:len(log)-1], index, "test.spl"},
		{"unknown compression", func() []byte { c := bytes.Clone(log); c[64] = 9; return c }(), index, "test.spl"},
		{"index entries count", log, frame(t, func() []byte { c := unframe(t, index); c[60]++; return c }()), "test.spi.sz"},
		{"index slot address", log, frame(t, flipSlot(t, unframe(t, index))), "test.spi.sz"},
		{"index trailing bytes", log, frame(t, append(unframe(t, index), 0)), "test.spi.sz"},
		{"index not framed", log, unframe(t, index), "test.spi.sz"},
		{"snappy block", flip(slog, LogHeaderSize+3), sindex, "test.spl"},
		{"snappy block size", func() []byte { c := bytes.Clone(slog); c[LogHeaderSize] = 0xff; c[LogHeaderSize+1] = 0x7f; return c }(), sindex, "test.spl"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := readAll(c.log, c.index)
			mustCorrupt(t, c.name, err)
			if !strings.Contains(err.Error(), c.file) || !strings.Contains(err.Error(), "at byte") {
				t.Errorf("%v: want the file %s and an offset named", err, c.file)
			}
		})
	}
}

// flipSlot moves the first occupied slot's address by one byte.
func flipSlot(t *testing.T, raw []byte) []byte {
	ir, err := NewIndexReader(bytes.NewReader(raw), "x")
	if err != nil {
		t.Fatal(err)
	}
	h := ir.Header()
	c := bytes.Clone(raw)
	for s := 0; s < int(h.Capacity); s++ {
		off := IndexHeaderSize + s*h.SlotSize() + int(h.HashSize)
		if leU32(c[off:]) != 0 {
			c[off]++
			return c
		}
	}
	t.Fatal("no occupied slot")
	return nil
}

func unframe(t *testing.T, b []byte) []byte {
	var out bytes.Buffer
	if _, err := out.ReadFrom(snappyReader(b)); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func frame(t *testing.T, raw []byte) []byte {
	var out bytes.Buffer
	w := snappyWriter(&out)
	w.Write(raw)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func TestRealFilesSwappedIndexFails(t *testing.T) {
	dir := filepath.Join(testdata, "libsparkey", "users", "1")
	log, _ := os.ReadFile(filepath.Join(dir, "part-00000.spl"))
	index, _ := os.ReadFile(filepath.Join(dir, "part-00001.spi.sz"))
	_, err := readAll(log, index)
	mustCorrupt(t, "part-00000 with part-00001's index", err)
}

// hugeLengths returns an uncompressed log whose header allows keys and
// values of any length and whose first entry is a 2^63-byte key and a
// 2^63-byte value: 2^64 bytes in all, which wraps to 0.
func hugeLengths(log []byte) []byte {
	c := bytes.Clone(log)
	binary.LittleEndian.PutUint64(c[40:], ^uint64(0))
	binary.LittleEndian.PutUint64(c[48:], ^uint64(0))
	e := binary.AppendUvarint(nil, 1<<63+1)
	e = binary.AppendUvarint(e, 1<<63)
	copy(c[LogHeaderSize:], e)
	return c
}
