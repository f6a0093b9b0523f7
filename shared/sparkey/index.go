package sparkey

import (
	"bufio"
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
	r      *bufio.Reader
	header IndexHeader
	slot   uint64 // next slot
	buf    [16]byte
	hash   uint64
	addr   uint64
	err    error
}

// NewIndexReader reads the header of an uncompressed index from r; name
// is used in errors.
func NewIndexReader(r io.Reader, name string) (*IndexReader, error) {
	ir := &IndexReader{file: name, r: bufio.NewReaderSize(r, 64<<10)}
	var b [IndexHeaderSize]byte
	if _, err := io.ReadFull(ir.r, b[:]); err != nil {
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
	in := &inputErr{r: r}
	return NewIndexReader(&framed{snappy.NewReader(in), in}, name)
}

// inputErr remembers the last error of the underlying input, so that
// framed can tell the input's failures from the decoder's.
type inputErr struct {
	r   io.Reader
	err error
}

func (i *inputErr) Read(p []byte) (int, error) {
	n, err := i.r.Read(p)
	i.err = err
	return n, err
}

// framed marks the framing decoder's own errors (bad checksums, chunks,
// lengths) as corruption of the file.
type framed struct {
	r  io.Reader
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
	for ir.slot < h.Capacity {
		b := ir.buf[:ss]
		if _, err := io.ReadFull(ir.r, b); err != nil {
			ir.err = ir.readErr(ir.slotOffset(), err, "reading a slot")
			return false
		}
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
	if _, err := ir.r.ReadByte(); err == nil {
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
