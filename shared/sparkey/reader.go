package sparkey

import (
	"bufio"
	"io"
	"slices"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
)

// Reader yields the live pairs of a log, those its index names, in log
// order: a put that a later put or a delete of its key overwrote is left
// out. It checks that the index belongs to the log and that every
// occupied slot matches a put of a key with the slot's hash. It is not
// safe for concurrent use.
type Reader struct {
	log     *LogReader
	ih      IndexHeader
	index   string
	live    []slot // by address; nil when every put is live
	next    int
	sum     uint64 // when live is nil: of the index's slots, minus the log's puts
	err     error
	entries uint64
}

type slot struct{ addr, hash uint64 }

// NewReader reads the index (in Snappy's framing format) and then the
// header of its log of logSize bytes. The index is read whole first; its
// live slots take 16 bytes each in memory only when the log holds deletes
// or overwritten puts.
func NewReader(log io.Reader, logSize int64, logName string, index io.Reader, indexName string) (*Reader, error) {
	return (*Buffers)(nil).NewReader(log, logSize, logName, index, indexName)
}

// Buffers is the memory Readers read with (the index's framing decoder,
// a chunk of slots, the log's input buffer and decompressed block, a zstd
// decoder), kept from one Reader to the next. A loader that reads many
// pairs, a few at a time, passes each Buffers to one Reader at a time: its
// pairs are then read with the memory of a few, not allocated anew for
// each (while loading, allocations are what the heap grows by, the
// collector running seldom). The zero value is ready to use; a nil
// *Buffers allocates for each Reader.
type Buffers struct {
	framing *snappy.Reader
	slots   []byte
	log     *bufio.Reader
	blk     []byte
	zd      *zstd.Decoder // of logs of zdBlock-byte blocks
	zdBlock uint32
}

// NewReader is the package's NewReader reading with b's memory; b may be
// given to another Reader once this one is closed.
func (b *Buffers) NewReader(log io.Reader, logSize int64, logName string, index io.Reader, indexName string) (*Reader, error) {
	lr, err := newLogReader(log, logName, logSize, b)
	if err != nil {
		return nil, err
	}
	r, err := newReader(lr, index, indexName, b)
	if err != nil {
		lr.Close()
		return nil, err
	}
	return r, nil
}

func newReader(lr *LogReader, index io.Reader, indexName string, bufs *Buffers) (*Reader, error) {
	ir, err := newFramedIndexReader(index, indexName, bufs)
	if bufs != nil {
		defer bufs.keepIndex(ir)
	}
	if err != nil {
		return nil, err
	}
	lh, ih := lr.Header(), ir.Header()
	switch {
	case ih.FileID != lh.FileID:
		return nil, corrupt(indexName, 12, nil, "index of log %#08x, not of %s (%#08x)", ih.FileID, lr.file, lh.FileID)
	case ih.DataEnd != lh.DataEnd || ih.Puts != lh.Puts:
		return nil, corrupt(indexName, 20, nil, "index of a log of %d bytes and %d puts, %s has %d and %d",
			ih.DataEnd, ih.Puts, lr.file, lh.DataEnd, lh.Puts)
	case lh.Compression == None && ih.EntryBlockBits != 0:
		return nil, corrupt(indexName, 92, nil, "entry block bits %d for an uncompressed log", ih.EntryBlockBits)
	}
	r := &Reader{log: lr, ih: ih, index: indexName}
	everyPut := lh.Deletes == 0 && ih.Entries == lh.Puts
	var n uint64
	for ir.Next() {
		n++
		if n > ih.Entries {
			return nil, corrupt(indexName, IndexHeaderSize+int64(ir.SlotNumber())*int64(ih.SlotSize()), nil,
				"more occupied slots than the header's %d entries", ih.Entries)
		}
		h, a := ir.Slot()
		if everyPut {
			r.sum += mix(a, h)
		} else {
			r.live = append(r.live, slot{a, h})
		}
	}
	if err := ir.Err(); err != nil {
		return nil, err
	}
	if n != ih.Entries {
		return nil, corrupt(indexName, 60, nil, "header counts %d entries, the table holds %d", ih.Entries, n)
	}
	if !everyPut {
		slices.SortFunc(r.live, func(x, y slot) int {
			switch {
			case x.addr < y.addr:
				return -1
			case x.addr > y.addr:
				return 1
			}
			return 0
		})
		for i := 1; i < len(r.live); i++ {
			if r.live[i].addr == r.live[i-1].addr {
				return nil, corrupt(indexName, 0, nil, "two slots name log address %d", r.live[i].addr)
			}
		}
		if r.live == nil {
			r.live = []slot{}
		}
	}
	return r, nil
}

// keepIndex takes back the slot buffer of ir (nil when its header could
// not be read) and lets the framing decoder drop its input.
func (b *Buffers) keepIndex(ir *IndexReader) {
	if ir != nil {
		b.slots = ir.buf[:0]
		ir.buf = nil
	}
	b.framing.Reset(nil)
}

// mix combines a slot's address and hash into one value whose sum over a
// table does not depend on the slots' order.
func mix(addr, hash uint64) uint64 { return fmix64(addr*0x9e3779b97f4a7c15 ^ hash) }

func (r *Reader) hash(key []byte) uint64 {
	if r.ih.HashSize == 4 {
		return uint64(Murmur32(key, r.ih.Seed))
	}
	return Murmur64(key, r.ih.Seed)
}

// Next advances to the next live pair.
func (r *Reader) Next() bool {
	if r.err != nil {
		return false
	}
	for r.log.Next() {
		if r.live == nil {
			if r.log.Deleted() {
				continue // not reached: a log with deletes keeps r.live
			}
			r.sum -= mix(r.log.Address(r.ih.EntryBlockBits), r.hash(r.log.Key()))
			r.entries++
			return true
		}
		addr := r.log.Address(r.ih.EntryBlockBits)
		if r.next < len(r.live) && r.live[r.next].addr < addr {
			r.err = corrupt(r.index, 0, nil, "a slot names log address %d, where %s has no entry", r.live[r.next].addr, r.log.file)
			return false
		}
		if r.next >= len(r.live) || r.live[r.next].addr != addr {
			continue // overwritten or deleted
		}
		if r.log.Deleted() {
			r.err = corrupt(r.index, 0, nil, "a slot names the delete at byte %d of %s", r.log.Offset(), r.log.file)
			return false
		}
		if h := r.hash(r.log.Key()); h != r.live[r.next].hash {
			r.err = corrupt(r.index, 0, nil, "the slot of the key at byte %d of %s has hash %#x, the key hashes to %#x",
				r.log.Offset(), r.log.file, r.live[r.next].hash, h)
			return false
		}
		r.next++
		r.entries++
		return true
	}
	if r.err = r.log.Err(); r.err != nil {
		return false
	}
	switch {
	case r.live == nil && r.sum != 0:
		r.err = corrupt(r.index, IndexHeaderSize, nil, "the table's slots do not match the puts of %s", r.log.file)
	case r.live != nil && r.next < len(r.live):
		r.err = corrupt(r.index, 0, nil, "a slot names log address %d, where %s has no entry", r.live[r.next].addr, r.log.file)
	}
	return false
}

// Key returns the current key, valid until the next call to Next.
func (r *Reader) Key() []byte { return r.log.Key() }

// Value returns the current value, valid until the next call to Next.
func (r *Reader) Value() []byte { return r.log.Value() }

// Offset returns the log offset of the current pair (of its block, for a
// compressed log).
func (r *Reader) Offset() int64 { return r.log.Offset() }

// Err returns the error that stopped Next, if any.
func (r *Reader) Err() error { return r.err }

// Close releases the log's decompressor; it closes neither input.
func (r *Reader) Close() { r.log.Close() }
