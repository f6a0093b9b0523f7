package sparkey

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
)

// WriterOptions configures a Writer. Zero values select the defaults
// noted.
type WriterOptions struct {
	// Compression of the log's blocks; default None.
	Compression Compression
	// BlockSize of a compressed log; default 4096 (libsparkey's usual).
	BlockSize int
	// HashSize is 4 or 8; default as libsparkey: 8 for tables of 2^23
	// slots or more, else 4.
	HashSize int
	// FileID and Seed; default random.
	FileID, Seed uint32
}

// Writer writes a log and, on Close, its index, in the layout libsparkey
// writes, for tests and benchmarks. It keeps every live key in memory. It
// is not safe for concurrent use.
type Writer struct {
	opts   WriterOptions
	ws     io.WriteSeeker
	out    *bufio.Writer
	header LogHeader
	off    uint64 // file offset of the next byte written to ws
	blk    []byte // compressed logs: the block being filled
	blkIdx uint32
	comp   []byte
	ze     *zstd.Encoder
	ents   []wentry
	live   map[string]int // key -> index in ents
	vlq    [2 * binary.MaxVarintLen64]byte
}

type wentry struct {
	pos  uint64 // byte offset, or offset of the block
	idx  uint32
	h32  uint32
	h64  uint64
	dead bool
}

// NewWriter starts a log on ws; its header is written by Close.
func NewWriter(ws io.WriteSeeker, opts WriterOptions) (*Writer, error) {
	if opts.Compression > Zstd {
		return nil, fmt.Errorf("sparkey: unknown compression %d", opts.Compression)
	}
	if opts.BlockSize == 0 {
		opts.BlockSize = 4096
	}
	if opts.Compression != None && (opts.BlockSize < 32 || opts.BlockSize > MaxBlockSize) {
		return nil, fmt.Errorf("sparkey: block size %d out of range", opts.BlockSize)
	}
	if opts.HashSize != 0 && opts.HashSize != 4 && opts.HashSize != 8 {
		return nil, fmt.Errorf("sparkey: hash size %d, want 4 or 8", opts.HashSize)
	}
	if opts.FileID == 0 {
		opts.FileID = rand.Uint32()
	}
	if opts.Seed == 0 {
		opts.Seed = rand.Uint32()
	}
	w := &Writer{opts: opts, ws: ws, out: bufio.NewWriterSize(ws, 256<<10), live: map[string]int{}}
	w.header = LogHeader{FileID: opts.FileID, Compression: opts.Compression}
	if opts.Compression != None {
		w.header.BlockSize = uint32(opts.BlockSize)
		w.blk = make([]byte, 0, opts.BlockSize)
	}
	if opts.Compression == Zstd {
		var err error
		if w.ze, err = zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1)); err != nil {
			return nil, fmt.Errorf("sparkey: %w", err)
		}
	}
	var zero [LogHeaderSize]byte
	if _, err := w.out.Write(zero[:]); err != nil {
		return nil, fmt.Errorf("sparkey: writing the log: %w", err)
	}
	w.off = LogHeaderSize
	return w, nil
}

// Put appends a put of key and value; a later Put or Delete of the key
// overwrites it.
func (w *Writer) Put(key, value []byte) error {
	pos, idx, err := w.add(uint64(len(key))+1, uint64(len(value)), key, value)
	if err != nil {
		return err
	}
	h := &w.header
	h.Puts++
	h.PutSize += uint64(len(key) + len(value))
	h.MaxKeyLen = max(h.MaxKeyLen, uint64(len(key)))
	h.MaxValueLen = max(h.MaxValueLen, uint64(len(value)))
	w.kill(key)
	w.live[string(key)] = len(w.ents)
	w.ents = append(w.ents, wentry{pos: pos, idx: idx, h32: Murmur32(key, w.opts.Seed), h64: Murmur64(key, w.opts.Seed)})
	return nil
}

// Delete appends a delete of key.
func (w *Writer) Delete(key []byte) error {
	if _, _, err := w.add(0, uint64(len(key)), key, nil); err != nil {
		return err
	}
	w.header.Deletes++
	w.header.DeleteSize += uint64(len(key))
	w.header.MaxKeyLen = max(w.header.MaxKeyLen, uint64(len(key)))
	w.kill(key)
	return nil
}

func (w *Writer) kill(key []byte) {
	if i, ok := w.live[string(key)]; ok {
		w.ents[i].dead = true
		delete(w.live, string(key))
	}
}

// add writes an entry and returns where it starts: its byte offset, or
// its block's offset and its index among the entries starting there.
func (w *Writer) add(a, b uint64, key, value []byte) (uint64, uint32, error) {
	hdr := binary.AppendUvarint(w.vlq[:0], a)
	hdr = binary.AppendUvarint(hdr, b)
	if w.blk == nil {
		pos := w.off
		for _, p := range [][]byte{hdr, key, value} {
			if _, err := w.out.Write(p); err != nil {
				return 0, 0, fmt.Errorf("sparkey: writing the log: %w", err)
			}
			w.off += uint64(len(p))
		}
		return pos, 0, nil
	}
	size := len(hdr) + len(key) + len(value)
	room := cap(w.blk) - len(w.blk)
	// As libsparkey: an entry's lengths never straddle blocks, and an
	// entry that would fit a block of its own does not start in a block
	// it overflows.
	if room < len(hdr) || (size <= cap(w.blk) && size > room) {
		if err := w.flush(); err != nil {
			return 0, 0, err
		}
	}
	pos, idx := w.off, w.blkIdx
	w.blkIdx++
	flushed := false
	for _, p := range [][]byte{hdr, key, value} {
		for len(p) > 0 {
			n := min(len(p), cap(w.blk)-len(w.blk))
			w.blk = append(w.blk, p[:n]...)
			p = p[n:]
			if len(w.blk) == cap(w.blk) {
				if err := w.flush(); err != nil {
					return 0, 0, err
				}
				flushed = true
			}
		}
	}
	if flushed && len(w.blk) > 0 {
		// An entry that spanned blocks ends its last one.
		if err := w.flush(); err != nil {
			return 0, 0, err
		}
	}
	return pos, idx, nil
}

// flush compresses and writes the block being filled.
func (w *Writer) flush() error {
	if len(w.blk) == 0 {
		return nil
	}
	w.header.MaxEntriesPerBlock = max(w.header.MaxEntriesPerBlock, w.blkIdx)
	if w.opts.Compression == Snappy {
		w.comp = snappy.Encode(w.comp[:cap(w.comp)], w.blk)
	} else {
		w.comp = w.ze.EncodeAll(w.blk, w.comp[:0])
	}
	var size [binary.MaxVarintLen64]byte
	n := binary.PutUvarint(size[:], uint64(len(w.comp)))
	if _, err := w.out.Write(size[:n]); err != nil {
		return fmt.Errorf("sparkey: writing the log: %w", err)
	}
	if _, err := w.out.Write(w.comp); err != nil {
		return fmt.Errorf("sparkey: writing the log: %w", err)
	}
	w.off += uint64(n + len(w.comp))
	w.blk, w.blkIdx = w.blk[:0], 0
	return nil
}

// Close finishes the log (its header included) and writes the index, in
// Snappy's framing format, to index. It closes neither.
func (w *Writer) Close(index io.Writer) error {
	if w.blk != nil {
		if err := w.flush(); err != nil {
			return err
		}
	}
	if w.ze != nil {
		w.ze.Close()
	}
	if err := w.out.Flush(); err != nil {
		return fmt.Errorf("sparkey: writing the log: %w", err)
	}
	w.header.DataEnd = w.off
	var hb [LogHeaderSize]byte
	putLogHeader(hb[:], &w.header)
	if _, err := w.ws.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("sparkey: writing the log header: %w", err)
	}
	if _, err := w.ws.Write(hb[:]); err != nil {
		return fmt.Errorf("sparkey: writing the log header: %w", err)
	}
	if _, err := w.ws.Seek(int64(w.off), io.SeekStart); err != nil {
		return fmt.Errorf("sparkey: writing the log header: %w", err)
	}
	fw := snappy.NewBufferedWriter(index)
	if err := w.writeIndex(fw); err != nil {
		return err
	}
	if err := fw.Close(); err != nil {
		return fmt.Errorf("sparkey: writing the index: %w", err)
	}
	return nil
}

func log2(x uint32) uint32 {
	var n uint32
	for ; x > 0; x >>= 1 {
		n++
	}
	return n
}

// writeIndex builds the Robin Hood table and writes it.
func (w *Writer) writeIndex(out io.Writer) error {
	lh := &w.header
	ih := IndexHeader{
		FileID: lh.FileID, Seed: w.opts.Seed, DataEnd: lh.DataEnd, MaxKeyLen: lh.MaxKeyLen,
		MaxValueLen: lh.MaxValueLen, Puts: lh.Puts, Entries: uint64(len(w.live)),
		Capacity: 1 | uint64(float64(lh.Puts)*1.3),
	}
	if lh.Compression != None {
		ih.EntryBlockBits = log2(lh.MaxEntriesPerBlock)
	}
	ih.AddressSize = 8
	if ih.DataEnd < 1<<(32-ih.EntryBlockBits) {
		ih.AddressSize = 4
	}
	ih.HashSize = uint32(w.opts.HashSize)
	if ih.HashSize == 0 {
		ih.HashSize = 4
		if ih.Capacity >= 1<<23 {
			ih.HashSize = 8
		}
	}
	type cell struct{ hash, addr uint64 }
	table := make([]cell, ih.Capacity)
	disp := func(slot uint64, hash uint64) uint64 {
		return (slot + ih.Capacity - hash%ih.Capacity) % ih.Capacity
	}
	for _, e := range w.ents {
		if e.dead {
			continue
		}
		c := cell{hash: uint64(e.h32), addr: e.pos<<ih.EntryBlockBits | uint64(e.idx)}
		if ih.HashSize == 8 {
			c.hash = e.h64
		}
		slot := c.hash % ih.Capacity
		for d := uint64(0); ; d++ {
			if table[slot].addr == 0 {
				table[slot] = c
				break
			}
			if od := disp(slot, table[slot].hash); od < d {
				table[slot], c = c, table[slot]
				d = od
			}
			slot = (slot + 1) % ih.Capacity
		}
	}
	for s, c := range table {
		if c.addr == 0 {
			continue
		}
		d := disp(uint64(s), c.hash)
		ih.MaxDisplacement = max(ih.MaxDisplacement, d)
		ih.TotalDisplacement += d
		if p := table[(uint64(s)+ih.Capacity-1)%ih.Capacity]; p.addr != 0 && p.hash == c.hash && ih.Capacity > 1 {
			ih.Collisions++
		}
	}
	bw := bufio.NewWriterSize(out, 64<<10)
	var hb [IndexHeaderSize]byte
	putIndexHeader(hb[:], &ih)
	bw.Write(hb[:])
	var sb [16]byte
	for _, c := range table {
		if ih.HashSize == 4 {
			binary.LittleEndian.PutUint32(sb[:], uint32(c.hash))
		} else {
			binary.LittleEndian.PutUint64(sb[:], c.hash)
		}
		if ih.AddressSize == 4 {
			binary.LittleEndian.PutUint32(sb[ih.HashSize:], uint32(c.addr))
		} else {
			binary.LittleEndian.PutUint64(sb[ih.HashSize:], c.addr)
		}
		bw.Write(sb[:ih.SlotSize()])
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("sparkey: writing the index: %w", err)
	}
	return nil
}
