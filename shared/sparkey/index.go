package sparkey

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/snappy"
)

// IndexReader streams the slots of an index. It is not safe for
// concurrent use.
type IndexReader struct {
	file   string
	r      io.Reader
	header IndexHeader
	slot   uint64 // next slot
	// buf holds slots read in one go, of which buf[pos:] are not yet
	// looked at: one read per chunk, not one per slot.
	buf  []byte
	pos  int
	hash uint64
	addr uint64
	err  error
}

// indexChunk is how many bytes of slots are read at once: a multiple of
// every slot size (8, 12 and 16 bytes).
const indexChunk = 12 << 10

// maxFramedRead bounds each read NewFramedIndexReader makes of its input.
// The framing decoder reads a whole chunk (up to 76 KiB, of a length that
// varies from chunk to chunk) in one call, and spangle's sources copy each
// read through a buffer of their own that grows to the largest read asked
// of them: a read of at most 16 KiB keeps that buffer at 16 KiB, for a few
// more calls.
const maxFramedRead = 16 << 10

// NewIndexReader reads the header of an uncompressed index from r; name
// is used in errors.
func NewIndexReader(r io.Reader, name string) (*IndexReader, error) {
	ir := &IndexReader{file: name, r: r}
	var b [IndexHeaderSize]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return nil, ir.readErr(0, err, "reading the header")
	}
	h, err := parseIndexHeader(b[:], name)
	if err != nil {
		return nil, err
	}
	ir.header = h
	return ir, nil
}

// NewFramedIndexReader reads an index kept in Snappy's framing format
// (NAME.spi.sz), as sequins expects it.
func NewFramedIndexReader(r io.Reader, name string) (*IndexReader, error) {
	return newFramedIndexReader(r, name, nil)
}

// newFramedIndexReader is NewFramedIndexReader with bufs' framing decoder
// and slot buffer, when set; the caller takes the slot buffer back
// (Buffers.keepIndex).
func newFramedIndexReader(r io.Reader, name string, bufs *Buffers) (*IndexReader, error) {
	in := &inputErr{r: r}
	var dec *snappy.Reader
	if bufs != nil && bufs.framing != nil {
		dec = bufs.framing
		dec.Reset(in)
	} else {
		dec = snappy.NewReader(in)
	}
	ir, err := NewIndexReader(&framed{dec, in}, name)
	if bufs != nil {
		bufs.framing = dec
		if ir != nil {
			ir.buf = bufs.slots[:0]
		}
	}
	return ir, err
}

// inputErr remembers the last error of the underlying input, so that
// framed can tell the input's failures from the decoder's. Its reads are
// of at most maxFramedRead bytes.
type inputErr struct {
	r   io.Reader
	err error
}

func (i *inputErr) Read(p []byte) (int, error) {
	if len(p) > maxFramedRead {
		p = p[:maxFramedRead]
	}
	n, err := i.r.Read(p)
	i.err = err
	return n, err
}

// framed marks the framing decoder's own errors (bad checksums, chunks,
// lengths) as corruption of the file.
type framed struct {
	r  *snappy.Reader
	in *inputErr
}

func (f *framed) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err != nil && err != io.EOF && err != f.in.err {
		err = fmt.Errorf("%w: %w", errFraming, err)
	}
	return n, err
}

var errFraming = errors.New("bad snappy framing")

// Header returns the index's header.
func (ir *IndexReader) Header() IndexHeader { return ir.header }

func (ir *IndexReader) readErr(off int64, err error, what string) error {
	switch {
	case errors.Is(err, errFraming):
		return corrupt(ir.file, off, err, "while %s (offset in the decompressed index)", what)
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return corrupt(ir.file, off, io.ErrUnexpectedEOF, "truncated while %s (offset in the decompressed index)", what)
	}
	return fmt.Errorf("sparkey: reading %s: %w", ir.file, err)
}

func (ir *IndexReader) slotOffset() int64 {
	return IndexHeaderSize + int64(ir.slot)*int64(ir.header.SlotSize())
}

// Next advances to the next occupied slot. At the end of the table it
// checks that the index ends there too and that the count of occupied
// slots is the header's.
func (ir *IndexReader) Next() bool {
	if ir.err != nil {
		return false
	}
	h := &ir.header
	ss := h.SlotSize()
	for {
		for ir.pos < len(ir.buf) {
			b := ir.buf[ir.pos : ir.pos+ss]
			ir.pos += ss
			ir.slot++
			var addr uint64
			if h.AddressSize == 4 {
				addr = uint64(binary.LittleEndian.Uint32(b[h.HashSize:]))
			} else {
				addr = binary.LittleEndian.Uint64(b[h.HashSize:])
			}
			if addr == 0 {
				continue
			}
			if h.HashSize == 4 {
				ir.hash = uint64(binary.LittleEndian.Uint32(b))
			} else {
				ir.hash = binary.LittleEndian.Uint64(b)
			}
			ir.addr = addr
			return true
		}
		if ir.slot >= h.Capacity {
			break
		}
		// The next chunk of slots; the capacity was checked against the
		// log's size, and a chunk is at most indexChunk bytes anyway.
		n := min(uint64(indexChunk/ss), h.Capacity-ir.slot) * uint64(ss)
		if uint64(cap(ir.buf)) < n {
			ir.buf = make([]byte, n)
		}
		ir.buf, ir.pos = ir.buf[:n], 0
		if got, err := io.ReadFull(ir.r, ir.buf); err != nil {
			ir.err = ir.readErr(ir.slotOffset()+int64(got), err, "reading a slot")
			return false
		}
	}
	var one [1]byte
	if n, err := io.ReadFull(ir.r, one[:]); n == 1 {
		ir.err = corrupt(ir.file, ir.slotOffset(), nil, "bytes after the %d slots of the table", h.Capacity)
	} else if !errors.Is(err, io.EOF) {
		ir.err = ir.readErr(ir.slotOffset(), err, "checking the end")
	}
	return false
}

// Slot returns the current slot's hash and log address.
func (ir *IndexReader) Slot() (hash, addr uint64) { return ir.hash, ir.addr }

// SlotNumber returns the current slot's number.
func (ir *IndexReader) SlotNumber() uint64 { return ir.slot - 1 }

// Err returns the error that stopped Next, if any.
func (ir *IndexReader) Err() error { return ir.err }
