package sparkey

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
)

// LogReader streams the entries of a log in file order. It is not safe
// for concurrent use.
type LogReader struct {
	file   string
	r      *bufio.Reader
	header LogHeader
	off    int64 // bytes of the file consumed

	// Compressed logs: the current decompressed block.
	blk      []byte
	pos      int
	blkStart int64 // file offset of the current block
	blkIdx   uint64
	comp     []byte // a compressed block longer than the input buffer
	zd       *zstd.Decoder
	bufs     *Buffers // where the input buffer and blk go back at Close

	key, val []byte
	scratch  []byte
	mem      []byte // the whole uncompressed log (NewLogReaderBytes)
	del      bool
	entryPos int64
	entryIdx uint64
	puts     uint64
	deletes  uint64
	err      error
	done     bool
}

// logBuffer is the input buffer of a log: an uncompressed entry or a
// compressed block that fits is used where it lies in it, without a copy
// (a 4 KiB block compresses to at most 4.7 KiB).
const logBuffer = 64 << 10

// NewLogReader reads the header of a log of size bytes (the size bounds
// every length in it) from r; name is used in errors.
func NewLogReader(r io.Reader, name string, size int64) (*LogReader, error) {
	return newLogReader(r, name, size, nil)
}

// NewLogReaderBytes reads the log held whole in data (a mapped file,
// say): Key and Value are then slices of data, and the entries of an
// uncompressed log are parsed where they lie, without a copy. Errors are
// those NewLogReader's reader would return, at the same offsets.
func NewLogReaderBytes(data []byte, name string) (*LogReader, error) {
	lr := &LogReader{file: name, r: bufio.NewReaderSize(bytes.NewReader(data), 16)}
	if err := lr.readHeader(int64(len(data))); err != nil {
		lr.Close()
		return nil, err
	}
	if lr.header.Compression == None {
		lr.mem = data
	}
	return lr, nil
}

// newLogReader is NewLogReader reading with bufs' memory, when set (see
// Buffers); Close gives it back.
func newLogReader(r io.Reader, name string, size int64, bufs *Buffers) (*LogReader, error) {
	lr := &LogReader{file: name, bufs: bufs}
	if bufs != nil && bufs.log != nil {
		bufs.log.Reset(r)
		lr.r, lr.blk, bufs.log, bufs.blk = bufs.log, bufs.blk[:0], nil, nil
	} else {
		lr.r = bufio.NewReaderSize(r, logBuffer)
	}
	if err := lr.readHeader(size); err != nil {
		lr.Close()
		return nil, err
	}
	return lr, nil
}

func (lr *LogReader) readHeader(size int64) error {
	var b [LogHeaderSize]byte
	if _, err := io.ReadFull(lr.r, b[:]); err != nil {
		return lr.readErr(0, err, "reading the header")
	}
	h, err := parseLogHeader(b[:], lr.file, size)
	if err != nil {
		return err
	}
	lr.header, lr.off = h, LogHeaderSize
	if h.Compression == Zstd {
		if bufs := lr.bufs; bufs != nil && bufs.zd != nil && bufs.zdBlock == h.BlockSize {
			lr.zd, bufs.zd = bufs.zd, nil
			return nil
		}
		lr.zd, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(h.BlockSize)+1<<20))
		if err != nil {
			return fmt.Errorf("sparkey: %s: %w", lr.file, err)
		}
	}
	return nil
}

// Header returns the log's header.
func (lr *LogReader) Header() LogHeader { return lr.header }

// Close releases the decompressor, if any, and gives the reader's buffers
// back to the Buffers it was made with; it does not close the input.
func (lr *LogReader) Close() {
	b := lr.bufs
	if lr.zd != nil {
		// A zstd decoder is kept for the next log of the same block size
		// (its memory limit is the block size's).
		if b != nil {
			if b.zd != nil {
				b.zd.Close()
			}
			b.zd, b.zdBlock = lr.zd, lr.header.BlockSize
		} else {
			lr.zd.Close()
		}
		lr.zd = nil
	}
	if b != nil {
		lr.bufs = nil
		lr.r.Reset(nil)
		b.log, b.blk = lr.r, lr.blk[:0]
		lr.r, lr.blk = nil, nil
	}
}

// readErr turns a read failure into a CorruptError when it is a
// truncation, and wraps it otherwise (an I/O error of the source).
func (lr *LogReader) readErr(off int64, err error, what string) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return corrupt(lr.file, off, io.ErrUnexpectedEOF, "truncated while %s", what)
	}
	return fmt.Errorf("sparkey: reading %s at byte %d: %w", lr.file, off, err)
}

// Next advances to the next entry, put or delete. It returns false at the
// end of the data or on error (see Err).
func (lr *LogReader) Next() bool {
	if lr.err != nil || lr.done {
		return false
	}
	var err error
	switch {
	case lr.mem != nil:
		err = lr.nextMem()
	case lr.header.Compression == None:
		err = lr.nextPlain()
	default:
		err = lr.nextBlocked()
	}
	if err != nil {
		lr.err = err
		return false
	}
	if lr.done {
		if lr.puts != lr.header.Puts || lr.deletes != lr.header.Deletes {
			lr.err = corrupt(lr.file, 16, nil, "header counts %d puts and %d deletes, the data holds %d and %d",
				lr.header.Puts, lr.header.Deletes, lr.puts, lr.deletes)
		}
		return false
	}
	if lr.del {
		lr.deletes++
	} else {
		lr.puts++
	}
	return true
}

// Key returns the current entry's key, valid until the next call to Next.
func (lr *LogReader) Key() []byte { return lr.key }

// Value returns the current put's value, valid until the next call to Next.
func (lr *LogReader) Value() []byte { return lr.val }

// Deleted reports whether the current entry is a delete.
func (lr *LogReader) Deleted() bool { return lr.del }

// Offset returns the file offset of the current entry (for a compressed
// log, of the block where it starts).
func (lr *LogReader) Offset() int64 { return lr.entryPos }

// Address returns the current entry's index address given the index's
// entry_block_bits.
func (lr *LogReader) Address(blockBits uint32) uint64 {
	return uint64(lr.entryPos)<<blockBits | lr.entryIdx
}

// Err returns the error that stopped Next, if any.
func (lr *LogReader) Err() error { return lr.err }

func (lr *LogReader) checkLens(a, b uint64, off int64) (klen, vlen uint64, err error) {
	h := &lr.header
	if a == 0 {
		klen, lr.del = b, true
	} else {
		klen, vlen, lr.del = a-1, b, false
	}
	// The header's limits are not bounded themselves: lengths of 2^62 and
	// more are refused so that their sum neither wraps nor turns negative
	// as an int (no file holds such an entry).
	if klen > h.MaxKeyLen || vlen > h.MaxValueLen || klen >= 1<<62 || vlen >= 1<<62 {
		return 0, 0, corrupt(lr.file, off, nil, "entry of a %d-byte key and %d-byte value; the header's limits are %d and %d",
			klen, vlen, h.MaxKeyLen, h.MaxValueLen)
	}
	return klen, vlen, nil
}

// vlq reads an unsigned LEB128 integer from the input.
func (lr *LogReader) vlq() (uint64, error) {
	var x uint64
	for shift := uint(0); ; shift += 7 {
		c, err := lr.r.ReadByte()
		if err != nil {
			return 0, err
		}
		lr.off++
		if shift == 63 && c > 1 || shift > 63 {
			return 0, errOverflow
		}
		x |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return x, nil
		}
	}
}

var errOverflow = errors.New("integer overflows 64 bits")

// nextPlain reads an entry of an uncompressed log.
func (lr *LogReader) nextPlain() error {
	end := int64(lr.header.DataEnd)
	if lr.off >= end {
		lr.done = true
		return nil
	}
	start := lr.off
	lr.entryPos, lr.entryIdx = start, 0
	a, err := lr.vlq()
	if err != nil {
		return lr.entryErr(start, err)
	}
	b, err := lr.vlq()
	if err != nil {
		return lr.entryErr(start, err)
	}
	klen, vlen, err := lr.checkLens(a, b, start)
	if err != nil {
		return err
	}
	n := klen + vlen
	// The two lengths may themselves have run past the data end: then
	// end-lr.off is negative, and no entry fits.
	if left := end - lr.off; left < 0 || n > uint64(left) {
		return corrupt(lr.file, start, nil, "entry of %d bytes runs past the data end %d", n, end)
	}
	rec, err := lr.take(n, &lr.scratch)
	if err != nil {
		return lr.readErr(start, err, "reading an entry")
	}
	lr.off += int64(n)
	lr.key, lr.val = rec[:klen:klen], rec[klen:]
	return nil
}

// nextMem is nextPlain over lr.mem.
func (lr *LogReader) nextMem() error {
	end := int64(lr.header.DataEnd)
	if lr.off >= end {
		lr.done = true
		return nil
	}
	start := lr.off
	lr.entryPos, lr.entryIdx = start, 0
	rest := lr.mem[start:]
	a, n1 := uvarint(rest)
	if n1 <= 0 {
		return lr.memErr(start, n1)
	}
	b, n2 := uvarint(rest[n1:])
	if n2 <= 0 {
		return lr.memErr(start, n2)
	}
	klen, vlen, err := lr.checkLens(a, b, start)
	if err != nil {
		return err
	}
	lr.off += int64(n1 + n2)
	n := klen + vlen
	if left := end - lr.off; left < 0 || n > uint64(left) {
		return corrupt(lr.file, start, nil, "entry of %d bytes runs past the data end %d", n, end)
	}
	rec := lr.mem[lr.off : lr.off+int64(n) : lr.off+int64(n)]
	lr.off += int64(n)
	lr.key, lr.val = rec[:klen:klen], rec[klen:]
	return nil
}

// uvarint decodes an unsigned LEB128 integer from b as vlq reads one:
// its value and length, 0 when b ends first, -1 when it overflows.
func uvarint(b []byte) (uint64, int) {
	var x uint64
	for i, c := range b {
		shift := uint(7 * i)
		if shift == 63 && c > 1 || shift > 63 {
			return 0, -1
		}
		x |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return x, i + 1
		}
	}
	return 0, 0
}

// memErr is the error of uvarint's n <= 0 at start.
func (lr *LogReader) memErr(start int64, n int) error {
	if n < 0 {
		return lr.entryErr(start, errOverflow)
	}
	return lr.entryErr(start, io.ErrUnexpectedEOF)
}

// take returns the next n bytes of the input: where they lie in the input
// buffer when it can hold them (valid until the next read), or else read
// into *spare, grown as needed (n was checked against the data left).
func (lr *LogReader) take(n uint64, spare *[]byte) ([]byte, error) {
	if n <= uint64(lr.r.Size()) {
		b, err := lr.r.Peek(int(n))
		if err != nil {
			return nil, err
		}
		lr.r.Discard(int(n))
		return b, nil
	}
	if uint64(cap(*spare)) < n {
		*spare = make([]byte, n)
	}
	b := (*spare)[:n]
	if _, err := io.ReadFull(lr.r, b); err != nil {
		return nil, err
	}
	return b, nil
}

func (lr *LogReader) entryErr(start int64, err error) error {
	if errors.Is(err, errOverflow) {
		return corrupt(lr.file, start, err, "bad entry length")
	}
	return lr.readErr(start, err, "reading an entry")
}

// nextBlock reads and decompresses the block at lr.off.
func (lr *LogReader) nextBlock() error {
	start := lr.off
	end := int64(lr.header.DataEnd)
	size, err := lr.vlq()
	if err != nil {
		return lr.entryErr(start, err)
	}
	limit := uint64(snappy.MaxEncodedLen(int(lr.header.BlockSize)))
	if lr.header.Compression == Zstd {
		limit = uint64(lr.header.BlockSize) + uint64(lr.header.BlockSize)>>7 + 1<<10
	}
	if left := end - lr.off; size == 0 || size > limit || left < 0 || size > uint64(left) {
		return corrupt(lr.file, start, nil, "compressed block of %d bytes (at most %d, and %d left before the data end)",
			size, limit, end-lr.off)
	}
	comp, err := lr.take(size, &lr.comp)
	if err != nil {
		return lr.readErr(start, err, "reading a block")
	}
	lr.off += int64(size)
	if uint32(cap(lr.blk)) < lr.header.BlockSize {
		lr.blk = make([]byte, 0, lr.header.BlockSize)
	}
	switch lr.header.Compression {
	case Snappy:
		n, err := snappy.DecodedLen(comp)
		if err != nil || n > int(lr.header.BlockSize) {
			return corrupt(lr.file, start, err, "snappy block decodes to %d bytes, the block size is %d", n, lr.header.BlockSize)
		}
		out, err := snappy.Decode(lr.blk[:cap(lr.blk)], comp)
		if err != nil {
			return corrupt(lr.file, start, err, "bad snappy block")
		}
		lr.blk = out
	case Zstd:
		out, err := lr.zd.DecodeAll(comp, lr.blk[:0])
		if err != nil || len(out) > int(lr.header.BlockSize) {
			return corrupt(lr.file, start, err, "bad zstd block (%d bytes decoded, block size %d)", len(out), lr.header.BlockSize)
		}
		lr.blk = out
	}
	lr.pos, lr.blkStart, lr.blkIdx = 0, start, 0
	return nil
}

// blockVLQ reads an unsigned LEB128 integer from the current block.
func (lr *LogReader) blockVLQ() (uint64, bool) {
	var x uint64
	for shift := uint(0); lr.pos < len(lr.blk); shift += 7 {
		c := lr.blk[lr.pos]
		lr.pos++
		if shift == 63 && c > 1 || shift > 63 {
			return 0, false
		}
		x |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return x, true
		}
	}
	return 0, false
}

// nextBlocked reads an entry of a compressed log.
func (lr *LogReader) nextBlocked() error {
	for lr.pos >= len(lr.blk) {
		if lr.off >= int64(lr.header.DataEnd) {
			lr.done = true
			return nil
		}
		if err := lr.nextBlock(); err != nil {
			return err
		}
	}
	lr.entryPos, lr.entryIdx = lr.blkStart, lr.blkIdx
	lr.blkIdx++
	a, ok1 := lr.blockVLQ()
	b, ok2 := lr.blockVLQ()
	if !ok1 || !ok2 {
		return corrupt(lr.file, lr.blkStart, nil, "entry %d of the block: lengths cut off or too large", lr.entryIdx)
	}
	klen, vlen, err := lr.checkLens(a, b, lr.blkStart)
	if err != nil {
		return err
	}
	n := klen + vlen
	if n <= uint64(len(lr.blk)-lr.pos) {
		rec := lr.blk[lr.pos : lr.pos+int(n)]
		lr.pos += int(n)
		lr.key, lr.val = rec[:klen:klen], rec[klen:]
		return nil
	}
	// The entry runs on into the next blocks: gather it, growing the
	// buffer only as data arrives.
	rec := lr.scratch[:0]
	for uint64(len(rec)) < n {
		if lr.pos >= len(lr.blk) {
			if lr.off >= int64(lr.header.DataEnd) {
				return corrupt(lr.file, lr.entryPos, nil, "entry of %d bytes runs past the data end", n)
			}
			if err := lr.nextBlock(); err != nil {
				return err
			}
		}
		take := min(uint64(len(lr.blk)-lr.pos), n-uint64(len(rec)))
		rec = append(rec, lr.blk[lr.pos:lr.pos+int(take)]...)
		lr.pos += int(take)
	}
	lr.scratch = rec
	lr.key, lr.val = rec[:klen:klen], rec[klen:]
	return nil
}
