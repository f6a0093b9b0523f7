package seqfile

import (
	"encoding/binary"
	"fmt"
	"io"
	"slices"

	"spangle/shared/badfile"
)

// readBufferSize is the size of the Reader's input buffer.
const readBufferSize = 64 << 10

// growStep bounds how far a buffer grows ahead of the data actually read, so
// a corrupt length cannot make the Reader allocate more than about twice
// what the file holds.
const growStep = 1 << 20

// Reader streams the records of one SequenceFile with memory bounded by one
// record, or one block for block-compressed files. It is not safe for
// concurrent use.
type Reader struct {
	name string
	in   *input
	pos  int64 // bytes consumed from in
	off  int64 // offset of the current record, block or header field
	hdr  Header
	dec  decompressor // nil when not compressed

	keyKind, valKind wrapping
	key, val         []byte
	err              error
	done             bool

	// Buffers reused from record to record.
	num     [16]byte // integers and sync markers; a field so it does not escape per call
	scratch []byte   // header strings; raw block buffers
	rawKey  []byte
	rawVal  []byte
	plain   []byte // decompressed value

	// Block state: the four decompressed buffers, read positions, and how
	// many records are left.
	blk  [4][]byte
	bpos [4]int
	left int

	// lent is where the buffers came from (NewReaderWith), to go back to
	// at Release.
	lent *Buffers
}

// Buffers is the memory a Reader decodes into: a block-compressed file's
// four decompressed buffers and its raw block, which grow to the largest
// block read (a megabyte or more for Hadoop's default block size), and a
// record's when it spans input chunks. A process that reads many files
// one after another hands one Buffers from each Reader to the next
// (NewReaderWith, Release) instead of growing new ones for every file. A
// Buffers is used by one Reader at a time.
type Buffers struct {
	scratch, rawKey, rawVal, plain, carry []byte
	blk                                   [4][]byte
}

// Indexes into Reader.blk.
const (
	keyLens = iota
	keys
	valLens
	vals
)

var blockBufNames = [4]string{"key lengths", "keys", "value lengths", "values"}

// NewReader reads and validates the header of the SequenceFile in r. name,
// usually the file's path, appears only in error messages. The Reader
// buffers r; it never reads the whole file at once.
func NewReader(r io.Reader, name string) (*Reader, error) {
	return NewReaderWith(r, name, nil)
}

// NewReaderWith is NewReader decoding into b's buffers (nil: its own),
// which the Reader owns until Release gives them back to b. On error the
// buffers are given back at once.
func NewReaderWith(r io.Reader, name string, b *Buffers) (*Reader, error) {
	sr := &Reader{name: name, in: newInput(r)}
	if b != nil {
		sr.lent = b
		sr.scratch, sr.rawKey, sr.rawVal, sr.plain, sr.in.carry = b.scratch[:0], b.rawKey[:0], b.rawVal[:0], b.plain[:0], b.carry[:0]
		for i := range sr.blk {
			sr.blk[i] = b.blk[i][:0]
		}
	}
	if err := sr.readHeader(); err != nil {
		sr.Release()
		return nil, err
	}
	sr.keyKind = wrappingOf(sr.hdr.KeyClass)
	sr.valKind = wrappingOf(sr.hdr.ValueClass)
	return sr, nil
}

// Release ends the Reader: Next returns false from then on, and the
// buffers it decoded into go back to the Buffers it was made with
// (NewReaderWith), grown as the file needed, for another Reader. The keys
// and values it returned must not be used after. Calling it again, or on
// a Reader made by NewReader, does nothing but end it.
func (r *Reader) Release() {
	r.done, r.key, r.val, r.left = true, nil, nil, 0
	if b := r.lent; b != nil {
		r.lent = nil
		b.scratch, b.rawKey, b.rawVal, b.plain, b.carry = r.scratch, r.rawKey, r.rawVal, r.plain, r.in.carry
		b.blk = r.blk
	}
	r.scratch, r.rawKey, r.rawVal, r.plain, r.in.carry = nil, nil, nil, nil, nil
	r.blk = [4][]byte{}
	r.in.cur, r.in.rest = nil, nil
}

// Header returns what the file declared about itself. The Metadata map is
// shared with the Reader and must not be modified.
func (r *Reader) Header() Header { return r.hdr }

// Next advances to the next record. It returns false at the end of the file
// or on error; Err tells which.
func (r *Reader) Next() bool {
	if r.err != nil || r.done {
		return false
	}
	var err error
	if r.hdr.Compression == Block {
		err = r.nextInBlock()
	} else {
		err = r.nextRecord()
	}
	if err != nil {
		r.key, r.val = nil, nil
		if err == io.EOF {
			r.done = true
		} else {
			r.err = err
		}
		return false
	}
	return true
}

// Key returns the current record's key, unwrapped from BytesWritable or Text.
// It is valid until the next call to Next.
func (r *Reader) Key() []byte { return r.key }

// Value returns the current record's value, unwrapped like Key. It is valid
// until the next call to Next.
func (r *Reader) Value() []byte { return r.val }

// Err returns the error that stopped Next: nil at a clean end of file,
// otherwise a *CorruptError (matching ErrCorrupt) or a wrapped I/O error.
func (r *Reader) Err() error { return r.err }

// Offset returns the byte offset in the file of the current record, or of
// its block in a block-compressed file.
func (r *Reader) Offset() int64 { return r.off }

// nextRecord reads one record of an uncompressed or record-compressed file.
func (r *Reader) nextRecord() error {
	if ok, err := r.peekRecord(); ok || err != nil {
		return err
	}
	var n int32
	for {
		r.off = r.pos
		if eof, err := r.atEOF(); eof || err != nil {
			return err
		}
		var err error
		if n, err = r.readInt32("record length"); err != nil {
			return err
		}
		if n != -1 {
			break
		}
		if err := r.readSync(); err != nil {
			return err
		}
	}
	keyLen, err := r.readInt32("key length")
	if err != nil {
		return err
	}
	if n < 0 || n > MaxRecordSize {
		return r.corrupt(fmt.Sprintf("record length %d", n), nil)
	}
	if keyLen < 0 || keyLen > n {
		return r.corrupt(fmt.Sprintf("key length %d in a record of %d bytes", keyLen, n), nil)
	}
	if r.rawKey, err = r.readN(r.rawKey, int(keyLen), "key"); err != nil {
		return err
	}
	if r.rawVal, err = r.readN(r.rawVal, int(n-keyLen), "value"); err != nil {
		return err
	}
	return r.setRecord(r.rawKey, r.rawVal)
}

// peekRecord reads the next record, when it is a whole record (not a sync
// mark) that the input buffer can hold, without copying it: key and value
// point into the buffer, which is read into again only at the next Next.
// A file of 130-byte records decodes in half the time it takes reading
// the fields one by one. ok false with a nil error leaves
// the input as it was, for nextRecord's field by field reading to go on
// (and to name whatever is wrong).
func (r *Reader) peekRecord() (ok bool, err error) {
	lens, err := r.in.Peek(8)
	if err != nil {
		return false, nil
	}
	n := int32(binary.BigEndian.Uint32(lens))
	keyLen := int32(binary.BigEndian.Uint32(lens[4:]))
	if n < 0 || keyLen < 0 || keyLen > n || int(n) > readBufferSize-8 {
		return false, nil
	}
	rec, err := r.in.Peek(8 + int(n))
	if err != nil {
		return false, nil
	}
	r.off = r.pos
	r.pos += int64(len(rec))
	r.in.Discard(len(rec))
	return true, r.setRecord(rec[8:8+keyLen], rec[8+keyLen:])
}

// setRecord decompresses a record's value in a record-compressed file,
// then unwraps and publishes its serialized key and value.
func (r *Reader) setRecord(key, val []byte) error {
	if r.dec != nil && r.hdr.Compression == Record {
		var err error
		if r.plain, err = r.dec.decompress(r.plain, val, MaxRecordSize); err != nil {
			return r.corrupt("decompressing value", err)
		}
		val = r.plain
	}
	var ok bool
	if r.key, ok = unwrap(r.keyKind, key); !ok {
		return r.corrupt(fmt.Sprintf("key of %d bytes is not a valid %s", len(key), r.hdr.KeyClass), nil)
	}
	if r.val, ok = unwrap(r.valKind, val); !ok {
		return r.corrupt(fmt.Sprintf("value of %d bytes is not a valid %s", len(val), r.hdr.ValueClass), nil)
	}
	return nil
}

// nextInBlock returns the next record of the current block, reading a new
// block first when the current one is used up.
func (r *Reader) nextInBlock() error {
	if r.left == 0 {
		if err := r.readBlock(); err != nil {
			return err
		}
	}
	// readBlock checked that the lengths are sound and cover the buffers.
	kl, n, _ := decodeVLong(r.blk[keyLens][r.bpos[keyLens]:])
	r.bpos[keyLens] += n
	vl, n, _ := decodeVLong(r.blk[valLens][r.bpos[valLens]:])
	r.bpos[valLens] += n
	key := r.blk[keys][r.bpos[keys] : r.bpos[keys]+int(kl)]
	r.bpos[keys] += int(kl)
	val := r.blk[vals][r.bpos[vals] : r.bpos[vals]+int(vl)]
	r.bpos[vals] += int(vl)
	r.left--
	return r.setRecord(key, val)
}

// readBlock reads and decompresses the next block and checks that its
// length buffers describe exactly its key and value buffers.
func (r *Reader) readBlock() error {
	r.off = r.pos
	if eof, err := r.atEOF(); eof || err != nil {
		return err
	}
	esc, err := r.readInt32("sync marker")
	if err != nil {
		return err
	}
	if esc != -1 {
		return r.corrupt(fmt.Sprintf("block starts with %#x, not a sync marker", uint32(esc)), nil)
	}
	if err := r.readSync(); err != nil {
		return err
	}
	count, err := r.readVLong("record count")
	if err != nil {
		return err
	}
	if count <= 0 || count > MaxRecordSize {
		return r.corrupt(fmt.Sprintf("block record count %d", count), nil)
	}
	for i := range r.blk {
		size, err := r.readVLong(blockBufNames[i] + " size")
		if err != nil {
			return err
		}
		if size < 0 || size > MaxRecordSize {
			return r.corrupt(fmt.Sprintf("%s size %d", blockBufNames[i], size), nil)
		}
		if r.scratch, err = r.readN(r.scratch, int(size), blockBufNames[i]); err != nil {
			return err
		}
		if r.blk[i], err = r.dec.decompress(r.blk[i], r.scratch, MaxRecordSize); err != nil {
			return r.corrupt("decompressing "+blockBufNames[i], err)
		}
		r.bpos[i] = 0
	}
	if err := r.checkLengths(keyLens, keys, int(count)); err != nil {
		return err
	}
	if err := r.checkLengths(valLens, vals, int(count)); err != nil {
		return err
	}
	r.left = int(count)
	return nil
}

// checkLengths verifies that buffer lens holds exactly count non-negative
// vints whose sum is the size of buffer data.
func (r *Reader) checkLengths(lens, data, count int) error {
	b := r.blk[lens]
	total := 0
	for i := 0; i < count; i++ {
		v, n, err := decodeVLong(b)
		if err != nil {
			return r.corrupt(fmt.Sprintf("%s: %d of %d records", blockBufNames[lens], i, count), err)
		}
		if v < 0 || v > int64(len(r.blk[data])-total) {
			return r.corrupt(fmt.Sprintf("%s: length %d overruns %d bytes of %s", blockBufNames[lens], v, len(r.blk[data]), blockBufNames[data]), nil)
		}
		total += int(v)
		b = b[n:]
	}
	if len(b) != 0 {
		return r.corrupt(fmt.Sprintf("%s: %d bytes after %d records", blockBufNames[lens], len(b), count), nil)
	}
	if total != len(r.blk[data]) {
		return r.corrupt(fmt.Sprintf("%s: %d bytes, but the lengths add up to %d", blockBufNames[data], len(r.blk[data]), total), nil)
	}
	return nil
}

// readSync reads the 16 bytes after a sync escape and checks them against
// the header.
func (r *Reader) readSync() error {
	if err := r.readFull(r.num[:16], "sync marker"); err != nil {
		return err
	}
	if [16]byte(r.num[:16]) != r.hdr.Sync {
		return r.corrupt("sync marker does not match the header's", nil)
	}
	return nil
}

// atEOF reports whether the input ended cleanly at the current position.
func (r *Reader) atEOF() (bool, error) {
	_, err := r.in.Peek(1)
	if err == io.EOF {
		return true, io.EOF
	}
	if err != nil {
		return false, r.ioError("reading", err)
	}
	return false, nil
}

// readFull fills b from the input; running out of input is corruption.
func (r *Reader) readFull(b []byte, what string) error {
	n, err := io.ReadFull(r.in, b)
	r.pos += int64(n)
	if err != nil {
		return r.readError(what, n, len(b), err)
	}
	return nil
}

// readN reads n bytes into dst's storage. It grows dst no faster than the
// data arrives, so a corrupt n on a short file costs little memory.
func (r *Reader) readN(dst []byte, n int, what string) ([]byte, error) {
	dst = dst[:0]
	for len(dst) < n {
		if len(dst) == cap(dst) {
			dst = slices.Grow(dst, min(n-len(dst), max(cap(dst), growStep)))
		}
		m, err := io.ReadFull(r.in, dst[len(dst):min(n, cap(dst))])
		r.pos += int64(m)
		dst = dst[:len(dst)+m]
		if err != nil {
			return dst, r.readError(what, len(dst), n, err)
		}
	}
	return dst, nil
}

func (r *Reader) readInt32(what string) (int32, error) {
	b := r.num[:4]
	if err := r.readFull(b, what); err != nil {
		return 0, err
	}
	return int32(binary.BigEndian.Uint32(b)), nil
}

func (r *Reader) readVLong(what string) (int64, error) {
	b := r.num[:maxVLongLen]
	if err := r.readFull(b[:1], what); err != nil {
		return 0, err
	}
	n := vlongLen(b[0])
	if err := r.readFull(b[1:n], what); err != nil {
		return 0, err
	}
	v, _, err := decodeVLong(b[:n])
	return v, err
}

// readError turns a short read into a CorruptError and anything else into
// an I/O error.
func (r *Reader) readError(what string, got, want int, err error) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return r.corrupt(fmt.Sprintf("truncated %s (%d of %d bytes)", what, got, want), io.ErrUnexpectedEOF)
	}
	return r.ioError("reading "+what, err)
}

func (r *Reader) ioError(what string, err error) error {
	return fmt.Errorf("seqfile: %s: %s at byte %d: %w", r.name, what, r.pos, err)
}

// corrupt returns a CorruptError at the current record, block or header
// field.
func (r *Reader) corrupt(reason string, err error) error {
	return badfile.New("seqfile", ErrCorrupt, r.name, r.off, reason, err)
}

// wrapping is how a Writable class frames its payload.
type wrapping int

const (
	rawWritable   wrapping = iota // unknown class: keep serialized bytes
	bytesWritable                 // 4-byte big-endian length
	textWritable                  // vint length
)

func wrappingOf(class string) wrapping {
	switch class {
	case BytesWritable:
		return bytesWritable
	case Text:
		return textWritable
	}
	return rawWritable
}

// unwrap returns the payload of a serialized Writable, or false if the
// length prefix does not match the serialized size exactly.
func unwrap(kind wrapping, b []byte) ([]byte, bool) {
	switch kind {
	case bytesWritable:
		if len(b) < 4 || int64(binary.BigEndian.Uint32(b)) != int64(len(b)-4) {
			return nil, false
		}
		return b[4:], true
	case textWritable:
		v, n, err := decodeVLong(b)
		if err != nil || v != int64(len(b)-n) {
			return nil, false
		}
		return b[n:], true
	}
	return b, true
}

// appendWrapped appends payload p framed for kind.
func appendWrapped(dst []byte, kind wrapping, p []byte) []byte {
	switch kind {
	case bytesWritable:
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(p)))
	case textWritable:
		dst = appendVLong(dst, int64(len(p)))
	}
	return append(dst, p...)
}
