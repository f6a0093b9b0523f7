package table

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math/bits"
	"sync"

	"github.com/golang/snappy"
)

// Filter blocks hold one filter per 2 KiB of data block offsets, as
// LevelDB builds them.
const (
	filterBaseLg = 11
	// flushAt is how much finished output sstWriter gathers before one
	// write to the file.
	flushAt = 256 << 10
)

// sstWriter writes one LevelDB table (the format sstable.go reads) from
// keys appended in order. It builds each data block in place in its
// output buffer, so a record is copied once on its way to the file, and
// writes the buffer out in large writes. It is not safe for concurrent use.
type sstWriter struct {
	w               io.Writer
	blockSize       int
	restartInterval int
	snappy          bool
	bloomBits       int // 0: no filter

	buf        []byte // output not yet written
	written    uint64 // bytes written before buf
	blockStart int    // where the block being built starts in buf
	restarts   []uint32
	inBlock    int    // entries in the block being built
	toRestart  int    // entries before the next restart point; 0: this one
	entries    int    // entries in the table
	lastKey    []byte // the last user key appended
	scratch    []byte // snappy output

	index    []byte // index block entries, one per data block
	indexRst []uint32

	filter        []byte   // filters generated so far
	filterOffsets []uint32 // where each filter starts
	keyHashes     []uint32 // bloom hashes of the keys not in a filter yet

	// opened is the index and filter as a reader holds them, made while
	// writing and handed to the table's first open (openWritten). Its
	// slices grow in the writer's pooled memory (spare): the open keeps
	// copies made to size (RunWriter.Finish), so a table's index is not
	// grown afresh, a doubling at a time, for every table of a load.
	opened *writtenTable
	spare  writtenTable // opened's slices of a released writer, emptied

	err error
}

// writtenTable is what openTable reads back from a table's end and
// parses, made by the writer that wrote the table: its index (as
// sstable's seps, sepEnd and handles) and filter block.
type writtenTable struct {
	seps    []byte
	sepEnd  []uint32
	handles []blockHandle
	filter  []byte // the filter block; nil: none
}

// sstWriters keeps writers' buffers between tables: a load writes many
// tables one after another, and buffers made afresh for each (grown to a
// table's index and filter) would keep the garbage collector busy.
var sstWriters sync.Pool

func newSSTWriter(w io.Writer, o BuildOptions) *sstWriter {
	bits := o.BloomBitsPerKey
	switch {
	case bits < 0:
		bits = 0
	case bits == 0:
		bits = 10
	}
	sw, _ := sstWriters.Get().(*sstWriter)
	if sw == nil {
		sw = &sstWriter{}
	}
	*sw = sstWriter{
		w: w, blockSize: o.blockSize(), restartInterval: o.restartInterval(), snappy: o.Snappy, bloomBits: bits,
		buf: sw.buf[:0], restarts: sw.restarts[:0], lastKey: sw.lastKey[:0], scratch: sw.scratch,
		index: sw.index[:0], indexRst: sw.indexRst[:0],
		filter: sw.filter[:0], filterOffsets: sw.filterOffsets[:0], keyHashes: sw.keyHashes[:0],
		opened: &writtenTable{seps: sw.spare.seps[:0], sepEnd: sw.spare.sepEnd[:0], handles: sw.spare.handles[:0]},
	}
	if cap(sw.buf) < flushAt+2*o.blockSize() {
		sw.buf = make([]byte, 0, flushAt+2*o.blockSize()+64<<10)
	}
	return sw
}

// release hands the writer's buffers to the next table, opened's index
// slices among them; neither the writer nor opened's slices may be used
// again.
func (w *sstWriter) release() {
	if o := w.opened; o != nil {
		w.spare = writtenTable{seps: o.seps[:0], sepEnd: o.sepEnd[:0], handles: o.handles[:0]}
	}
	w.w, w.opened = nil, nil
	sstWriters.Put(w)
}

// add appends a key (a user key: the trailer is added here) and its
// value. Keys must not decrease (ErrOrder).
func (w *sstWriter) add(key, value []byte) error {
	if w.err != nil {
		return w.err
	}
	// One pass finds the prefix shared with the previous key, which the
	// entry leaves out, and the order of the two.
	prev := w.lastKey
	n := min(len(key), len(prev))
	shared := commonPrefix(key[:n], prev[:n])
	if w.entries > 0 && (shared < n && key[shared] < prev[shared] || shared == len(key) && len(key) < len(prev)) {
		return fmt.Errorf("%w: %q after %q", ErrOrder, key, prev)
	}
	// The previous key only keeps its shared prefix: copy the rest.
	w.lastKey = append(prev[:shared], key[shared:]...)
	w.entries++
	// buf is stored back once: each store of a slice into the writer is
	// a write barrier while the garbage collector marks.
	buf := w.buf
	// A count down, not inBlock % restartInterval: a division per
	// record was a tenth of add's time.
	if w.toRestart == 0 {
		w.restarts = append(w.restarts, uint32(len(buf)-w.blockStart))
		shared = 0
		w.toRestart = w.restartInterval
	}
	w.toRestart--
	buf = binary.AppendUvarint(buf, uint64(shared))
	buf = binary.AppendUvarint(buf, uint64(len(key)+len(trailer)-shared))
	buf = binary.AppendUvarint(buf, uint64(len(value)))
	buf = append(buf, key[shared:]...)
	buf = append(buf, trailer[:]...)
	buf = append(buf, value...)
	w.buf = buf
	w.inBlock++
	if w.bloomBits > 0 {
		w.keyHashes = append(w.keyHashes, bloomHash(key))
	}
	if len(buf)-w.blockStart+4*len(w.restarts)+4 >= w.blockSize {
		w.finishDataBlock()
	}
	return w.err
}

// commonPrefix is the length of the prefix a and b (of one length)
// share, compared 8 bytes at a time. A tail shorter than 8 bytes is
// compared as the last 8 bytes: those it shares with the word before are
// equal, so its first difference is the first in the tail (keys of 14
// bytes differ in their last few, which compared a byte at a time were
// half of the comparison's instructions).
func commonPrefix(a, b []byte) int {
	n, i := len(a), 0
	if n < 8 {
		for i < n && a[i] == b[i] {
			i++
		}
		return i
	}
	for ; ; i += 8 {
		i = min(i, n-8)
		if x := binary.LittleEndian.Uint64(a[i:]) ^ binary.LittleEndian.Uint64(b[i:]); x != 0 {
			return i + bits.TrailingZeros64(x)>>3
		}
		if i == n-8 {
			return n
		}
	}
}

// finishDataBlock closes the block being built and indexes it under its
// last key.
func (w *sstWriter) finishDataBlock() {
	if w.inBlock == 0 {
		return
	}
	bh := w.finishBlock(w.restarts, w.snappy)
	w.restarts, w.inBlock, w.toRestart = w.restarts[:0], 0, 0
	w.indexRst = append(w.indexRst, uint32(len(w.index)))
	var handle [2 * binary.MaxVarintLen64]byte
	w.index = appendWholeEntry(w.index, w.lastKey, trailer[:], appendHandle(handle[:0], bh))
	o := w.opened
	o.seps = append(o.seps, w.lastKey...)
	o.sepEnd = append(o.sepEnd, uint32(len(o.seps)))
	o.handles = append(o.handles, bh)
	// The filters up to the next block's offset: the first holds this
	// block's keys, the rest (a block spanning several 2 KiB) are empty.
	if w.bloomBits > 0 {
		for next := w.offset() >> filterBaseLg; uint64(len(w.filterOffsets)) < next; {
			w.generateFilter()
		}
	}
	if len(w.buf) >= flushAt {
		w.flush()
	}
}

// offset is where the next byte lands in the file.
func (w *sstWriter) offset() uint64 { return w.written + uint64(len(w.buf)) }

// finishBlock ends the block that starts at blockStart with its restart
// array, compresses it if asked and worth it (an eighth saved, as LevelDB
// decides), appends the trailer, and returns its handle.
func (w *sstWriter) finishBlock(restarts []uint32, compress bool) blockHandle {
	if len(restarts) == 0 {
		restarts = append(restarts, 0)
	}
	for _, r := range restarts {
		w.buf = binary.LittleEndian.AppendUint32(w.buf, r)
	}
	w.buf = binary.LittleEndian.AppendUint32(w.buf, uint32(len(restarts)))
	kind := byte(blockPlain)
	if compress {
		raw := w.buf[w.blockStart:]
		w.scratch = snappy.Encode(w.scratch[:cap(w.scratch)], raw)
		if len(w.scratch) < len(raw)-len(raw)/8 {
			w.buf = append(w.buf[:w.blockStart], w.scratch...)
			kind = blockSnappy
		}
	}
	return w.seal(kind)
}

// seal ends the block that starts at blockStart as it is, with its
// trailer (kind, then the checksum of block and kind), and returns its
// handle. The filter block is sealed this way directly.
func (w *sstWriter) seal(kind byte) blockHandle {
	bh := blockHandle{offset: w.written + uint64(w.blockStart), size: uint64(len(w.buf) - w.blockStart)}
	w.buf = append(w.buf, kind)
	crc := crc32.Checksum(w.buf[w.blockStart:], castagnoli)
	w.buf = binary.LittleEndian.AppendUint32(w.buf, maskCRC(crc))
	w.blockStart = len(w.buf)
	return bh
}

func (w *sstWriter) flush() {
	if w.err != nil || w.blockStart == 0 {
		return
	}
	n, err := w.w.Write(w.buf[:w.blockStart])
	if err != nil {
		w.err = fmt.Errorf("table: writing table: %w", err)
		return
	}
	w.written += uint64(n)
	w.buf = append(w.buf[:0], w.buf[w.blockStart:]...)
	w.blockStart = 0
}

// generateFilter makes one bloom filter of the pending keys (LevelDB's
// built-in bloom filter: k probes by double hashing, k stored last).
func (w *sstWriter) generateFilter() {
	w.filterOffsets = append(w.filterOffsets, uint32(len(w.filter)))
	n := len(w.keyHashes)
	if n == 0 {
		return
	}
	k := min(max(w.bloomBits*69/100, 1), 30)
	bits := max(n*w.bloomBits, 64)
	nBytes := (bits + 7) / 8
	bits = nBytes * 8
	start := len(w.filter)
	w.filter = append(w.filter, make([]byte, nBytes)...)
	f := w.filter[start:]
	mod := newFastMod(uint32(bits))
	for _, h := range w.keyHashes {
		delta := h>>17 | h<<15
		for j := 0; j < k; j++ {
			pos := mod.of(h)
			f[pos/8] |= 1 << (pos % 8)
			h += delta
		}
	}
	w.filter = append(w.filter, byte(k))
	w.keyHashes = w.keyHashes[:0]
}

// finish writes the last data block, the filter, metaindex and index
// blocks and the footer, and returns the table's size.
func (w *sstWriter) finish() (uint64, error) {
	w.finishDataBlock()
	var filterBH blockHandle
	hasFilter := w.bloomBits > 0
	if hasFilter {
		if len(w.keyHashes) > 0 {
			w.generateFilter()
		}
		// The filter block: the filters, where each starts, where that
		// array starts, and the base.
		w.blockStart = len(w.buf)
		w.buf = append(w.buf, w.filter...)
		for _, o := range w.filterOffsets {
			w.buf = binary.LittleEndian.AppendUint32(w.buf, o)
		}
		w.buf = binary.LittleEndian.AppendUint32(w.buf, uint32(len(w.filter)))
		w.buf = append(w.buf, filterBaseLg)
		w.opened.filter = bytes.Clone(w.buf[w.blockStart:])
		filterBH = w.seal(blockPlain)
	}

	// The metaindex names the filter.
	var meta []uint32
	if hasFilter {
		meta = append(meta, uint32(len(w.buf)-w.blockStart))
		w.buf = appendWholeEntry(w.buf, []byte(bloomFilterName), nil, appendHandle(nil, filterBH))
	}
	metaBH := w.finishBlock(meta, false)

	w.buf = append(w.buf, w.index...)
	indexBH := w.finishBlock(w.indexRst, false)

	var footer [footerLen]byte
	p := appendHandle(footer[:0], metaBH)
	appendHandle(p, indexBH)
	binary.LittleEndian.PutUint64(footer[footerLen-8:], tableMagic)
	w.buf = append(w.buf, footer[:]...)
	w.blockStart = len(w.buf)
	w.flush()
	return w.written, w.err
}

// appendWholeEntry appends a block entry that shares no prefix with the
// one before it (an index's and the metaindex's entries are restarts all):
// its key is key then suffix (a user key and its trailer).
func appendWholeEntry(dst, key, suffix, value []byte) []byte {
	dst = binary.AppendUvarint(dst, 0)
	dst = binary.AppendUvarint(dst, uint64(len(key)+len(suffix)))
	dst = binary.AppendUvarint(dst, uint64(len(value)))
	dst = append(dst, key...)
	dst = append(dst, suffix...)
	return append(dst, value...)
}

func appendHandle(dst []byte, bh blockHandle) []byte {
	return binary.AppendUvarint(binary.AppendUvarint(dst, bh.offset), bh.size)
}

// maskCRC masks a stored checksum as LevelDB does, so that a checksum of
// data holding checksums is not trivially related to them.
func maskCRC(c uint32) uint32 { return (c>>15 | c<<17) + 0xa282ead8 }

// fastMod computes x % d for one d by multiplying instead of dividing
// (Lemire, Kaser and Kurz, "Faster remainder by direct computation",
// 2019): exact for every 32-bit x and d > 0. A bloom filter takes k
// remainders per key.
type fastMod struct {
	m uint64
	d uint32
}

func newFastMod(d uint32) fastMod { return fastMod{m: ^uint64(0)/uint64(d) + 1, d: d} }

func (f fastMod) of(x uint32) uint32 {
	hi, _ := bits.Mul64(f.m*uint64(x), uint64(f.d))
	return uint32(hi)
}

// bloomHash is the hash LevelDB's bloom filter probes with (its Hash,
// seeded 0xbc9f1d34; TestBloomHash checks it against goleveldb's): a
// murmur-like mix of 4 bytes at a time, then the tail.
func bloomHash(key []byte) uint32 {
	const m = 0xc6a4a793
	h := 0xbc9f1d34 ^ uint32(len(key))*m
	for len(key) >= 4 {
		h += binary.LittleEndian.Uint32(key)
		h *= m
		h ^= h >> 16
		key = key[4:]
	}
	switch len(key) {
	case 3:
		h += uint32(key[2]) << 16
		fallthrough
	case 2:
		h += uint32(key[1]) << 8
		fallthrough
	case 1:
		h += uint32(key[0])
		h *= m
		h ^= h >> 24
	}
	return h
}
