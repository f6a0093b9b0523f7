package seqfile

import (
	"bufio"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Writer defaults, as Hadoop has them.
const (
	// DefaultBlockSize is how many bytes of serialized keys and values a
	// block-compressed Writer gathers before it compresses a block
	// (Hadoop's io.seqfile.compress.blocksize).
	DefaultBlockSize = 1_000_000
	// DefaultSyncInterval is how many bytes an uncompressed or
	// record-compressed Writer lets pass between sync markers.
	DefaultSyncInterval = 2000
)

// WriterOptions configures a Writer. Zero values select the defaults noted.
type WriterOptions struct {
	// KeyClass and ValueClass are the Writable class names to declare;
	// default BytesWritable. Keys and values given to Append are framed as
	// BytesWritable or Text when named so, and written as they are (already
	// serialized) for any other class.
	KeyClass, ValueClass string
	// Compression is the kind of compression; default None.
	Compression Compression
	// Codec is the Hadoop codec class name, one of the *Codec constants
	// except BZip2Codec; default DefaultCodec when compressing.
	Codec string
	// BlockSize is how many bytes of serialized records go into one
	// compressed block; default DefaultBlockSize, at most MaxRecordSize.
	BlockSize int
	// Metadata is written into the header.
	Metadata map[string]string
	// SyncInterval is how many bytes may pass between sync markers in files
	// that are not block-compressed; default DefaultSyncInterval.
	SyncInterval int
	// Sync is the file's sync marker; when zero a random one is drawn, as
	// Hadoop does. Tests set it to get reproducible output.
	Sync [16]byte
}

// Writer writes a SequenceFile, mainly to build test data and benchmarks
// that Hadoop could have produced. It is not safe for concurrent use.
type Writer struct {
	out  *bufio.Writer
	pos  int64 // bytes written so far
	hdr  Header
	comp compressor // nil when not compressed

	keyKind, valKind wrapping
	blockSize        int
	syncInterval     int
	lastSync         int64
	err              error // sticky: the first failure
	closed           bool

	key, val, buf []byte   // scratch reused between records
	num           [20]byte // record lengths and sync markers

	// Block state: the four buffers being gathered and their record count.
	blk   [4][]byte
	count int
}

// NewWriter writes the header to w and returns a Writer for its records. The
// Writer buffers; call Close to flush.
func NewWriter(w io.Writer, opts WriterOptions) (*Writer, error) {
	h := Header{
		Version:     version,
		KeyClass:    opts.KeyClass,
		ValueClass:  opts.ValueClass,
		Compression: opts.Compression,
		Metadata:    opts.Metadata,
		Sync:        opts.Sync,
	}
	if h.KeyClass == "" {
		h.KeyClass = BytesWritable
	}
	if h.ValueClass == "" {
		h.ValueClass = BytesWritable
	}
	sw := &Writer{
		out:          bufio.NewWriterSize(w, readBufferSize),
		keyKind:      wrappingOf(h.KeyClass),
		valKind:      wrappingOf(h.ValueClass),
		blockSize:    opts.BlockSize,
		syncInterval: opts.SyncInterval,
	}
	if sw.blockSize <= 0 {
		sw.blockSize = DefaultBlockSize
	}
	if sw.blockSize > MaxRecordSize {
		return nil, fmt.Errorf("seqfile: block size %d exceeds %d: %w", sw.blockSize, MaxRecordSize, ErrUnsupported)
	}
	if sw.syncInterval <= 0 {
		sw.syncInterval = DefaultSyncInterval
	}
	switch h.Compression {
	case None:
	case Record, Block:
		h.Codec = opts.Codec
		if h.Codec == "" {
			h.Codec = DefaultCodec
		}
		var err error
		if sw.comp, err = newCompressor(h.Codec); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("seqfile: compression %v: %w", h.Compression, ErrUnsupported)
	}
	if h.Sync == ([16]byte{}) {
		if _, err := rand.Read(h.Sync[:]); err != nil {
			return nil, fmt.Errorf("seqfile: sync marker: %w", err)
		}
	}
	sw.hdr = h
	if err := sw.write(appendHeader(nil, &h)); err != nil {
		return nil, err
	}
	return sw, nil
}

// Header returns the header the Writer wrote.
func (w *Writer) Header() Header { return w.hdr }

// Append writes one record, framing key and value for their classes.
func (w *Writer) Append(key, value []byte) error {
	if w.closed {
		return errors.New("seqfile: append to a closed Writer")
	}
	if w.err != nil {
		return w.err
	}
	w.key = appendWrapped(w.key[:0], w.keyKind, key)
	w.val = appendWrapped(w.val[:0], w.valKind, value)
	if int64(len(w.key))+int64(len(w.val)) > MaxRecordSize {
		return fmt.Errorf("seqfile: record of %d bytes exceeds %d: %w", len(w.key)+len(w.val), MaxRecordSize, ErrUnsupported)
	}
	if w.hdr.Compression == Block {
		w.err = w.appendToBlock()
	} else {
		w.err = w.appendRecord()
	}
	return w.err
}

// appendRecord writes w.key and w.val as one record, after a sync marker
// when one is due.
func (w *Writer) appendRecord() error {
	if w.pos >= w.lastSync+int64(w.syncInterval) {
		if err := w.writeSync(); err != nil {
			return err
		}
	}
	val := w.val
	if w.comp != nil {
		var err error
		if w.buf, err = w.comp.compress(w.buf[:0], w.val); err != nil {
			return fmt.Errorf("seqfile: compressing value: %w", err)
		}
		val = w.buf
		if int64(len(w.key))+int64(len(val)) > MaxRecordSize {
			return fmt.Errorf("seqfile: compressed record of %d bytes exceeds %d: %w", len(w.key)+len(val), MaxRecordSize, ErrUnsupported)
		}
	}
	lens := w.num[:8]
	binary.BigEndian.PutUint32(lens[:4], uint32(len(w.key)+len(val)))
	binary.BigEndian.PutUint32(lens[4:], uint32(len(w.key)))
	if err := w.write(lens); err != nil {
		return err
	}
	if err := w.write(w.key); err != nil {
		return err
	}
	return w.write(val)
}

// appendToBlock adds w.key and w.val to the current block and writes the
// block once it holds BlockSize bytes. A block never holds more than
// MaxRecordSize bytes of keys or of values, so a Reader can read it.
func (w *Writer) appendToBlock() error {
	if w.count > 0 && (len(w.blk[keys])+len(w.key) > MaxRecordSize || len(w.blk[vals])+len(w.val) > MaxRecordSize) {
		if err := w.flushBlock(); err != nil {
			return err
		}
	}
	w.blk[keyLens] = appendVLong(w.blk[keyLens], int64(len(w.key)))
	w.blk[keys] = append(w.blk[keys], w.key...)
	w.blk[valLens] = appendVLong(w.blk[valLens], int64(len(w.val)))
	w.blk[vals] = append(w.blk[vals], w.val...)
	w.count++
	if len(w.blk[keys])+len(w.blk[vals]) >= w.blockSize {
		return w.flushBlock()
	}
	return nil
}

// flushBlock writes the gathered records as one block: sync marker, record
// count, then each buffer compressed and prefixed by its compressed size.
func (w *Writer) flushBlock() error {
	if w.count == 0 {
		return nil
	}
	if err := w.writeSync(); err != nil {
		return err
	}
	w.buf = appendVLong(w.buf[:0], int64(w.count))
	for i := range w.blk {
		at := len(w.buf)
		// Leave room for the size, then move the data if it needs less.
		w.buf = append(w.buf, make([]byte, maxVLongLen)...)
		var err error
		if w.buf, err = w.comp.compress(w.buf, w.blk[i]); err != nil {
			return fmt.Errorf("seqfile: compressing %s: %w", blockBufNames[i], err)
		}
		size := len(w.buf) - at - maxVLongLen
		if size > MaxRecordSize {
			return fmt.Errorf("seqfile: compressed %s of %d bytes exceeds %d: %w", blockBufNames[i], size, MaxRecordSize, ErrUnsupported)
		}
		var sizeBuf [maxVLongLen]byte
		enc := appendVLong(sizeBuf[:0], int64(size))
		copy(w.buf[at+len(enc):], w.buf[at+maxVLongLen:])
		copy(w.buf[at:], enc)
		w.buf = w.buf[:at+len(enc)+size]
		w.blk[i] = w.blk[i][:0]
	}
	w.count = 0
	return w.write(w.buf)
}

func (w *Writer) writeSync() error {
	b := w.num[:20]
	binary.BigEndian.PutUint32(b[:4], 0xffffffff)
	copy(b[4:], w.hdr.Sync[:])
	if err := w.write(b); err != nil {
		return err
	}
	w.lastSync = w.pos
	return nil
}

func (w *Writer) write(b []byte) error {
	n, err := w.out.Write(b)
	w.pos += int64(n)
	if err != nil {
		return fmt.Errorf("seqfile: write: %w", err)
	}
	return nil
}

// Close writes the last block and flushes the Writer's buffer. It does not
// close the underlying io.Writer.
func (w *Writer) Close() error {
	if w.closed {
		return w.err
	}
	w.closed = true
	if w.err != nil {
		return w.err
	}
	if w.hdr.Compression == Block {
		if w.err = w.flushBlock(); w.err != nil {
			return w.err
		}
	}
	if err := w.out.Flush(); err != nil {
		w.err = fmt.Errorf("seqfile: flush: %w", err)
	}
	return w.err
}
