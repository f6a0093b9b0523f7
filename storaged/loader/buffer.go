package loader

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"slices"
	"sync"
	"sync/atomic"

	"spangle/storaged/table"
)

// chunkSize is the size of the arena chunks records are copied into.
const chunkSize = 1 << 20

// entry locates one buffered record. prefix is table.KeyPrefix of the key
// (its first 8 bytes), so most comparisons never touch the arena.
type entry struct {
	prefix uint64
	chunk  uint32
	off    uint32
}

// buffer holds one partition's records for the general path. Records are
// copied into large chunks ([klen uvarint][vlen uvarint][key][value], and
// with ords the record's ordinal, 8 bytes) so that the garbage collector
// sees few objects. add is safe for concurrent use; take, sort and record
// are used by one goroutine.
type buffer struct {
	// ords is set when records carry their ordinal (a load that resolves
	// duplicate keys); fixed at creation.
	ords bool

	// added counts the records ever added, take or not.
	added atomic.Int64

	mu      sync.Mutex // guards the fields below during add and take
	chunks  [][]byte
	entries []entry
	bytes   int64
}

// add copies a record in and returns the bytes it took. ord is kept only
// when b.ords is set.
func (b *buffer) add(key, val []byte, ord uint64) int64 {
	need := 2*binary.MaxVarintLen32 + len(key) + len(val) + 8
	b.mu.Lock()
	defer b.mu.Unlock()
	last := len(b.chunks) - 1
	if last < 0 || cap(b.chunks[last])-len(b.chunks[last]) < need {
		b.chunks = append(b.chunks, make([]byte, 0, max(chunkSize, need)))
		last++
	}
	c := b.chunks[last]
	off := len(c)
	c = binary.AppendUvarint(c, uint64(len(key)))
	c = binary.AppendUvarint(c, uint64(len(val)))
	c = append(c, key...)
	c = append(c, val...)
	if b.ords {
		c = binary.BigEndian.AppendUint64(c, ord)
	}
	b.chunks[last] = c
	b.entries = append(b.entries, entry{prefix: table.KeyPrefix(key), chunk: uint32(last), off: uint32(off)})
	n := int64(len(c)-off) + 16
	b.bytes += n
	b.added.Add(1)
	return n
}

// reset empties b for reuse, keeping its first chunk's memory. Records
// taken from it before are invalid.
func (b *buffer) reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.chunks) > 0 {
		b.chunks = append(b.chunks[:0], b.chunks[0][:0])
	}
	b.entries, b.bytes = b.entries[:0], 0
	b.added.Store(0)
}

// take moves the records out into a new buffer and leaves b empty.
func (b *buffer) take() *buffer {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := &buffer{ords: b.ords, chunks: b.chunks, entries: b.entries, bytes: b.bytes}
	b.chunks, b.entries, b.bytes = nil, nil, 0
	return out
}

// record returns the key and value of entry i, pointing into the arena.
func (b *buffer) record(i int) (key, val []byte) {
	e := b.entries[i]
	c := b.chunks[e.chunk][e.off:]
	kl, n1 := binary.Uvarint(c)
	vl, n2 := binary.Uvarint(c[n1:])
	c = c[n1+n2:]
	return c[:kl:kl], c[kl : kl+vl : kl+vl]
}

// ordOf returns the ordinal of a record, 0 in a buffer without ords.
func (b *buffer) ordOf(e entry) uint64 {
	if !b.ords {
		return 0
	}
	c := b.chunks[e.chunk][e.off:]
	kl, n1 := binary.Uvarint(c)
	vl, n2 := binary.Uvarint(c[n1:])
	at := n1 + n2 + int(kl) + int(vl)
	return binary.BigEndian.Uint64(c[at : at+8])
}

func (b *buffer) keyOf(e entry) []byte {
	c := b.chunks[e.chunk][e.off:]
	kl, n1 := binary.Uvarint(c)
	_, n2 := binary.Uvarint(c[n1:])
	return c[n1+n2 : n1+n2+int(kl)]
}

// sort orders the entries by key, and with ords equal keys by ordinal.
func (b *buffer) sort() {
	slices.SortFunc(b.entries, func(x, y entry) int {
		if x.prefix != y.prefix {
			if x.prefix < y.prefix {
				return -1
			}
			return 1
		}
		if c := bytes.Compare(b.keyOf(x), b.keyOf(y)); c != 0 || !b.ords {
			return c
		}
		return cmp.Compare(b.ordOf(x), b.ordOf(y))
	})
}
