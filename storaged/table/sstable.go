package table

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"runtime"
	"runtime/debug"
	"sort"
	"sync/atomic"

	"github.com/golang/snappy"
	"github.com/syndtr/goleveldb/leveldb/filter"

	"spangle/storaged/blockcache"
)

// ErrCorrupt marks a table that does not read back as LevelDB wrote it:
// a bad checksum, a truncated block, an entry running off its block.
var ErrCorrupt = errors.New("table: corrupt table")

// LevelDB's table format, as its table_format.md describes it: data
// blocks, a filter block, a metaindex block naming the filter, an index
// block with one entry per data block, and a 48-byte footer holding the
// handles of the last two and a magic number. Every block is followed by a
// type byte (compression) and the masked CRC-32C of block and type.
const (
	footerLen       = 48
	tableMagic      = 0xdb4775248b80fb57
	blockTrailerLen = 5
	blockPlain      = 0
	blockSnappy     = 1
	// bloomFilterName is the metaindex key of the filter that
	// filter.NewBloomFilter builds (LevelDB's built-in bloom filter).
	bloomFilterName = "filter.leveldb.BuiltinBloomFilter"
	// maxBlockSize refuses a block handle no writer would produce before
	// allocating for it.
	maxBlockSize = 1 << 30
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// unmaskCRC undoes LevelDB's masking of stored checksums.
func unmaskCRC(m uint32) uint32 {
	r := m - 0xa282ead8
	return r>>17 | r<<15
}

// blockHandle locates a block in its table file, trailer excluded.
type blockHandle struct {
	offset, size uint64
}

func decodeBlockHandle(b []byte) (blockHandle, int) {
	off, n := binary.Uvarint(b)
	if n <= 0 {
		return blockHandle{}, 0
	}
	size, m := binary.Uvarint(b[n:])
	if m <= 0 {
		return blockHandle{}, 0
	}
	return blockHandle{off, size}, n + m
}

// sstable is one LevelDB table file opened for point lookups: its index
// stays in memory, and its filter when lookups ask it (readFilter), its
// data blocks are read on demand through the node's block cache or in
// its mapping. It is safe for concurrent use until closed.
type sstable struct {
	f    *os.File
	name string
	size uint64
	id   uint64 // the block cache's name for this table
	// blocks is the node's block cache; nil caches nothing.
	blocks *blockcache.Cache

	// The index: for data block i, the user key of its separator (no
	// smaller than its last key, smaller than the next block's first) is
	// seps[sepEnd[i-1]:sepEnd[i]], and where it lies is handles[i].
	seps    []byte
	sepEnd  []uint32
	handles []blockHandle
	// sepCommon is what every separator starts with, and sepPrefix[i]
	// the KeyPrefix of separator i after it: the index search compares
	// numbers in one array, and whole separators only where those tie.
	sepCommon []byte
	sepPrefix []uint64

	// mapped is the file mapped read-only when the table reads its data
	// blocks where the page cache holds them (no block cache; see
	// mapData); nil reads them with ReadAt.
	mapped []byte
	// users counts the lookups in mapped, plus one for the table itself
	// that close drops: whoever drops the count to zero unmaps it, so a
	// lookup running late past close never reads unmapped memory.
	users atomic.Int64
	// checked[i] is set once data block i's checksum has been checked in
	// the mapping.
	checked []atomic.Bool

	// filter is the filter block's data; nil when the table has no bloom
	// filter this reader knows.
	filter filterBlock
}

// openTable opens a table file and reads its index and filter (which it
// keeps only when lookups ask it).
func openTable(path string, blocks *blockcache.Cache) (*sstable, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("table: %w", err)
	}
	t := &sstable{f: f, name: path, blocks: blocks, id: blocks.NewTableID()}
	filterBH, err := t.readMeta()
	if err != nil {
		f.Close()
		return nil, err
	}
	t.mapData()
	if err := t.readFilter(filterBH); err != nil {
		t.close()
		return nil, err
	}
	return t, nil
}

// openWritten opens a table of size bytes that its writer has just
// written, with the index and filter the writer made (which it keeps):
// what openTable reads back from the file's end, checks and parses.
// The separators' order is still checked (prefixIndex), and blocks are
// checked as lookups read them, as for any table.
func openWritten(path string, size uint64, w *writtenTable, blocks *blockcache.Cache) (*sstable, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("table: %w", err)
	}
	t := &sstable{f: f, name: path, size: size, blocks: blocks, id: blocks.NewTableID(),
		seps: w.seps, sepEnd: w.sepEnd, handles: w.handles}
	if err := t.prefixIndex(); err != nil {
		f.Close()
		return nil, t.corrupt(0, "index: %v", err)
	}
	t.mapData()
	if w.filter != nil && !t.plainMapped() {
		f, err := newFilterBlock(w.filter)
		if err != nil {
			t.close()
			return nil, t.corrupt(0, "filter: %v", err)
		}
		t.filter = f
	}
	return t, nil
}

// readMeta reads the footer, the metaindex and the index, and returns
// where the filter block is (size 0: none).
func (t *sstable) readMeta() (blockHandle, error) {
	fi, err := t.f.Stat()
	if err != nil {
		return blockHandle{}, fmt.Errorf("table: %w", err)
	}
	t.size = uint64(fi.Size())
	if t.size < footerLen {
		return blockHandle{}, t.corrupt(0, "file of %d bytes is shorter than a footer", t.size)
	}
	var footer [footerLen]byte
	if _, err := t.f.ReadAt(footer[:], int64(t.size-footerLen)); err != nil {
		return blockHandle{}, fmt.Errorf("table: reading %s: %w", t.name, err)
	}
	if binary.LittleEndian.Uint64(footer[footerLen-8:]) != tableMagic {
		return blockHandle{}, t.corrupt(t.size-footerLen, "bad magic number")
	}
	metaBH, n := decodeBlockHandle(footer[:])
	if n == 0 {
		return blockHandle{}, t.corrupt(t.size-footerLen, "bad metaindex handle")
	}
	indexBH, m := decodeBlockHandle(footer[n:])
	if m == 0 {
		return blockHandle{}, t.corrupt(t.size-footerLen, "bad index handle")
	}

	meta, err := t.readBlock(metaBH)
	if err != nil {
		return blockHandle{}, err
	}
	var filterBH blockHandle
	err = forEachEntry(meta, func(k, v []byte) error {
		if string(k) == bloomFilterName {
			if filterBH, n = decodeBlockHandle(v); n == 0 {
				return fmt.Errorf("bad filter handle")
			}
		}
		return nil
	})
	t.blocks.Discard(blockcache.Key{Table: t.id, Offset: metaBH.offset}, meta)
	if err != nil {
		return blockHandle{}, t.corrupt(metaBH.offset, "metaindex: %v", err)
	}

	index, err := t.readBlock(indexBH)
	if err != nil {
		return blockHandle{}, err
	}
	// Writers restart the index at every entry: its restart count is its
	// entry count, and the index's arrays are made once.
	if _, n, err := blockLayout(index); err == nil {
		t.seps = make([]byte, 0, len(index))
		t.sepEnd = make([]uint32, 0, n)
		t.handles = make([]blockHandle, 0, n)
	}
	err = forEachEntry(index, func(k, v []byte) error {
		if len(k) < 8 {
			return fmt.Errorf("index key of %d bytes", len(k))
		}
		bh, n := decodeBlockHandle(v)
		if n == 0 || bh.size > maxBlockSize || bh.offset+bh.size+blockTrailerLen > t.size {
			return fmt.Errorf("bad block handle")
		}
		t.seps = append(t.seps, k[:len(k)-8]...)
		t.sepEnd = append(t.sepEnd, uint32(len(t.seps)))
		t.handles = append(t.handles, bh)
		return nil
	})
	t.blocks.Discard(blockcache.Key{Table: t.id, Offset: indexBH.offset}, index)
	if err != nil {
		return blockHandle{}, t.corrupt(indexBH.offset, "index: %v", err)
	}
	// The index is kept for the table's life: drop append's slack.
	t.seps = bytes.Clone(t.seps)
	if err := t.prefixIndex(); err != nil {
		return blockHandle{}, t.corrupt(indexBH.offset, "index: %v", err)
	}
	return filterBH, nil
}

// readFilter reads and checks the filter block at bh, if any, and keeps
// it unless the table's lookups never ask it: a mapped table of plain
// blocks searches the block in place, which costs what the filter's
// probes cost (getMapped), so its filter (10 bits a key, 1.5 MB of heap
// for 1M keys) would only take memory.
func (t *sstable) readFilter(bh blockHandle) error {
	if bh.size == 0 {
		return nil
	}
	buf, err := t.readBlock(bh)
	if err != nil {
		return err
	}
	ck := blockcache.Key{Table: t.id, Offset: bh.offset}
	f, err := newFilterBlock(buf)
	if err != nil {
		t.blocks.Discard(ck, buf)
		return t.corrupt(bh.offset, "filter: %v", err)
	}
	if !t.plainMapped() {
		// Kept for the table's life: on the heap, not in a buffer of the
		// block cache's, which are reused.
		f.data = bytes.Clone(buf)
		t.filter = f
	}
	t.blocks.Discard(ck, buf)
	return nil
}

// plainMapped reports whether lookups read the table's blocks in place:
// it is mapped, and its blocks are stored plain (a writer compresses all
// of a table's blocks or none; the first says which).
func (t *sstable) plainMapped() bool {
	if t.mapped == nil || len(t.handles) == 0 {
		return false
	}
	var kind [1]byte
	_, err := t.f.ReadAt(kind[:], int64(t.handles[0].offset+t.handles[0].size))
	return err == nil && kind[0] == blockPlain
}

// prefixIndex fills sepCommon and sepPrefix from the separators, which it
// checks are in order (the search relies on it).
func (t *sstable) prefixIndex() error {
	n := len(t.sepEnd)
	if n == 0 {
		return nil
	}
	first, last := t.sep(0), t.sep(n-1)
	m := min(len(first), len(last))
	t.sepCommon = first[:commonPrefix(first[:m], last[:m]):m]
	c := len(t.sepCommon)
	t.sepPrefix = make([]uint64, n)
	for i := range n {
		s := t.sep(i)
		if i > 0 && bytes.Compare(t.sep(i-1), s) > 0 {
			return fmt.Errorf("separator %d out of order", i)
		}
		if !bytes.HasPrefix(s, t.sepCommon) {
			return fmt.Errorf("separator %d out of order", i)
		}
		t.sepPrefix[i] = KeyPrefix(s[c:])
	}
	return nil
}

// search returns the index of the first data block whose separator is
// not below key: the only block that may hold it; len(t.handles) when
// key is above them all.
func (t *sstable) search(key []byte) int {
	n := len(t.sepPrefix)
	c := len(t.sepCommon)
	switch bytes.Compare(key[:min(len(key), c)], t.sepCommon) {
	case -1:
		return 0
	case 1:
		return n
	}
	kp := KeyPrefix(key[c:])
	// lo: the first separator whose prefix is not below key's; hi: the
	// first whose prefix is above it.
	lo, hi := 0, n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if t.sepPrefix[m] < kp {
			lo = m + 1
		} else {
			hi = m
		}
	}
	hi = n
	for j := lo; j < hi; {
		m := int(uint(j+hi) >> 1)
		if t.sepPrefix[m] <= kp {
			j = m + 1
		} else {
			hi = m
		}
	}
	// Separators in [lo, hi) share key's prefix: compare them whole.
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if bytes.Compare(t.sep(m), key) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// mapData maps the table's file so that lookups read data blocks in
// place, through the page cache; a table reading through a block cache
// is not mapped. Where the file cannot be mapped, lookups read blocks
// with ReadAt as before.
func (t *sstable) mapData() {
	if t.blocks != nil || len(t.handles) == 0 {
		return
	}
	mem, err := mapTable(t.f, t.size)
	if err != nil {
		return
	}
	t.mapped = mem
	t.checked = make([]atomic.Bool, len(t.handles))
	t.users.Store(1)
}

// enter begins a lookup in the mapping; false once the table is closed.
func (t *sstable) enter() bool {
	for {
		n := t.users.Load()
		if n <= 0 {
			return false
		}
		if t.users.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// leave ends a lookup begun by enter, or the table's own use (close).
func (t *sstable) leave() {
	if t.users.Add(-1) == 0 {
		unmapTable(t.mapped)
	}
}

// recoverFault ends getMapped: it puts back the goroutine's
// SetPanicOnFault setting and turns a fault reading the mapping into
// ErrCorrupt. Any other panic goes on.
func (t *sstable) recoverFault(panicOnFault bool, offset uint64, err *error) {
	debug.SetPanicOnFault(panicOnFault)
	if r := recover(); r != nil {
		if _, ok := r.(interface{ Addr() uintptr }); !ok {
			panic(r)
		}
		*err = t.corrupt(offset, "reading the mapped block: %v", r)
	}
}

// errClosed: a lookup came after its table was closed, which the version
// manager waits for, up to a bound.
var errClosed = errors.New("table: lookup in a closed table")

// getMapped is get for data block i of a mapped table, read in place.
// handled is false for a block that is not stored plain (Snappy): get
// then reads and uncompresses it.
func (t *sstable) getMapped(dst, key []byte, i int) (value []byte, found, deleted, handled bool, err error) {
	if !t.enter() {
		return dst, false, false, true, errClosed
	}
	defer t.leave()
	bh := t.handles[i] // within the file: checked as the index was read
	// The file never changes, but one cut short under the mapping (a bad
	// disk, a hand) faults where it ends: as bad as a failed checksum.
	defer t.recoverFault(debug.SetPanicOnFault(true), bh.offset, &err)
	handled = true
	raw := t.mapped[bh.offset : bh.offset+bh.size+blockTrailerLen : bh.offset+bh.size+blockTrailerLen]
	n := bh.size
	if raw[n] != blockPlain {
		return dst, false, false, false, nil
	}
	// A block's checksum is checked the first time a lookup reads it; the
	// scrubber checks every block again from time to time.
	if !t.checked[i].Load() {
		if got, want := crc32.Checksum(raw[:n+1], castagnoli), unmaskCRC(binary.LittleEndian.Uint32(raw[n+1:])); got != want {
			return dst, false, false, true, t.corrupt(bh.offset, "block checksum %08x, want %08x", got, want)
		}
		t.checked[i].Store(true)
	}
	// The bloom filter is not asked: its probes cost about what searching
	// the block costs, and nearly every lookup finds its key.
	v, kind, found, err := seekBlock(raw[:n], key)
	if err != nil {
		return dst, false, false, true, t.corrupt(bh.offset, "%v", err)
	}
	if found {
		dst = append(dst, v...)
	}
	return dst, found, found && kind != keyTypeValue, true, nil
}

func (t *sstable) corrupt(offset uint64, format string, args ...any) error {
	return fmt.Errorf("%w: %s at offset %d: %s", ErrCorrupt, t.name, offset, fmt.Sprintf(format, args...))
}

func (t *sstable) sep(i int) []byte {
	var from uint32
	if i > 0 {
		from = t.sepEnd[i-1]
	}
	return t.seps[from:t.sepEnd[i]]
}

// get looks key up and appends its value to dst. found reports whether
// the table holds the key at all; deleted, a deletion marker, which hides
// older tables' values.
func (t *sstable) get(dst, key []byte) (value []byte, found, deleted bool, err error) {
	i := t.search(key)
	if i == len(t.handles) {
		return dst, false, false, nil
	}
	if t.mapped != nil {
		v, found, deleted, handled, err := t.getMapped(dst, key, i)
		if handled {
			return v, found, deleted, err
		}
	}
	bh := t.handles[i]
	var kind byte
	search := func(cached []byte) {
		var v []byte
		v, kind, found, err = seekCached(cached, key)
		if found {
			dst = append(dst, v...)
		}
	}
	ck := blockcache.Key{Table: t.id, Offset: bh.offset}
	if !t.blocks.Get(ck, search) {
		// The bloom filter saves reading the block; a cached block is
		// searched for less than the filter's probes cost.
		if t.filter.data != nil && !t.filter.mayContain(bh.offset, key) {
			return dst, false, false, nil
		}
		block, rerr := t.readBlock(bh)
		if rerr != nil {
			return dst, false, false, rerr
		}
		cached := t.digested(ck, block)
		search(cached)
		t.blocks.Add(ck, cached)
	}
	if err != nil {
		return dst, false, false, t.corrupt(bh.offset, "%v", err)
	}
	return dst, found, found && kind != keyTypeValue, nil
}

// readBlock reads a block, checks its checksum and uncompresses it, into
// a buffer of the block cache's (the caller adds it or discards it).
func (t *sstable) readBlock(bh blockHandle) ([]byte, error) {
	if bh.size > maxBlockSize || bh.offset+bh.size+blockTrailerLen > t.size {
		return nil, t.corrupt(bh.offset, "block of %d bytes runs past the file's %d", bh.size, t.size)
	}
	ck := blockcache.Key{Table: t.id, Offset: bh.offset}
	buf := t.blocks.Buffer(ck, int(bh.size+blockTrailerLen))
	if _, err := t.f.ReadAt(buf, int64(bh.offset)); err != nil {
		t.blocks.Discard(ck, buf)
		// The file never changes: a block that cannot be read back (an
		// I/O error of a bad disk, a file cut short) is as bad as one
		// whose checksum fails.
		return nil, t.corrupt(bh.offset, "reading %d bytes: %v", len(buf), err)
	}
	n := bh.size
	if got, want := crc32.Checksum(buf[:n+1], castagnoli), unmaskCRC(binary.LittleEndian.Uint32(buf[n+1:])); got != want {
		t.blocks.Discard(ck, buf)
		return nil, t.corrupt(bh.offset, "block checksum %08x, want %08x", got, want)
	}
	switch buf[n] {
	case blockPlain:
		return buf[:n], nil
	case blockSnappy:
		defer t.blocks.Discard(ck, buf)
		size, err := snappy.DecodedLen(buf[:n])
		if err != nil || size > maxBlockSize {
			return nil, t.corrupt(bh.offset, "snappy: bad length %d: %v", size, err)
		}
		out, err := snappy.Decode(t.blocks.Buffer(ck, size), buf[:n])
		if err != nil {
			return nil, t.corrupt(bh.offset, "snappy: %v", err)
		}
		return out, nil
	}
	t.blocks.Discard(ck, buf)
	return nil, t.corrupt(bh.offset, "unknown block type %d", buf[n])
}

func (t *sstable) close() error {
	if t.mapped != nil {
		t.leave()
	}
	t.blocks.DropTable(t.id)
	return t.f.Close()
}

// A block is a run of entries, each key stored as the bytes it shares with
// the previous key and the rest, then an array of restart points (offsets
// of entries whose key is stored whole) and their count:
//
//	entry:   shared uvarint | unshared uvarint | value length uvarint | key[shared:] | value
//	trailer: restart uint32 ... | count uint32
//
// Keys in data and index blocks are internal keys: the user key then 8
// bytes of sequence number and type.

// blockLayout checks a block's restart array and returns where the entries
// end and how many restart points there are.
func blockLayout(b []byte) (entriesEnd, restarts int, err error) {
	if len(b) < 4 {
		return 0, 0, errors.New("block shorter than its restart count")
	}
	restarts = int(binary.LittleEndian.Uint32(b[len(b)-4:]))
	if restarts == 0 || restarts > (len(b)-4)/4 {
		return 0, 0, fmt.Errorf("bad restart count %d", restarts)
	}
	return len(b) - 4 - 4*restarts, restarts, nil
}

// decodeEntry decodes the entry at off of a block whose entries end at
// end, given the key before it: the entry's key (written into keyBuf),
// value and the next entry's offset.
func decodeEntry(b []byte, off, end int, prev, keyBuf []byte) (key, value []byte, next int, err error) {
	shared, n1 := binary.Uvarint(b[off:end])
	if n1 <= 0 {
		return nil, nil, 0, fmt.Errorf("bad entry at %d", off)
	}
	unshared, n2 := binary.Uvarint(b[off+n1 : end])
	if n2 <= 0 {
		return nil, nil, 0, fmt.Errorf("bad entry at %d", off)
	}
	vlen, n3 := binary.Uvarint(b[off+n1+n2 : end])
	if n3 <= 0 {
		return nil, nil, 0, fmt.Errorf("bad entry at %d", off)
	}
	p := off + n1 + n2 + n3
	if shared > uint64(len(prev)) || unshared > uint64(end-p) || vlen > uint64(end-p)-unshared {
		return nil, nil, 0, fmt.Errorf("entry at %d runs off its block", off)
	}
	key = append(append(keyBuf[:0], prev[:shared]...), b[p:p+int(unshared)]...)
	p += int(unshared)
	return key, b[p : p+int(vlen) : p+int(vlen)], p + int(vlen), nil
}

// restartKey returns the whole key stored at restart point i.
func restartKey(b []byte, end, i int) ([]byte, error) {
	off := int(binary.LittleEndian.Uint32(b[end+4*i:]))
	if off >= end {
		return nil, fmt.Errorf("restart point %d beyond the entries", off)
	}
	shared, n1 := binary.Uvarint(b[off:end])
	unshared, n2 := binary.Uvarint(b[off+max(n1, 0) : end])
	if n1 <= 0 || n2 <= 0 || shared != 0 {
		return nil, fmt.Errorf("bad restart entry at %d", off)
	}
	_, n3 := binary.Uvarint(b[off+n1+n2 : end])
	p := off + n1 + n2 + n3
	if n3 <= 0 || unshared > uint64(end-p) {
		return nil, fmt.Errorf("restart entry at %d runs off its block", off)
	}
	return b[p : p+int(unshared)], nil
}

// userKey strips an internal key's 8-byte trailer.
func userKey(ikey []byte) ([]byte, error) {
	if len(ikey) < 8 {
		return nil, fmt.Errorf("internal key of %d bytes", len(ikey))
	}
	return ikey[:len(ikey)-8], nil
}

// seekBlock finds key's first entry in a data block: its value and key
// type (keyTypeValue, or 0 for a deletion). Binary search over the restart
// points finds the last whole key before key, and a scan goes on from
// there.
func seekBlock(b []byte, key []byte) (value []byte, kind byte, found bool, err error) {
	end, restarts, err := blockLayout(b)
	if err != nil {
		return nil, 0, false, err
	}
	// A block read in place is mostly not in the CPU's caches: the binary
	// search below would wait for each restart entry it reads in turn.
	// Reading the first byte of every restart entry first, loads that do
	// not wait for each other, brings their cache lines in at once; that
	// byte is the entry's shared length, 0 at a restart point.
	var shared byte
	for i := 0; i < restarts; i++ {
		if off := int(binary.LittleEndian.Uint32(b[end+4*i:])); off < end {
			shared |= b[off]
		}
	}
	if shared != 0 {
		return nil, 0, false, errors.New("bad restart entry")
	}
	// The first restart point whose key is not below key; the entry
	// sought, if any, lies after the restart point before it.
	var serr error
	r := sort.Search(restarts, func(i int) bool {
		k, err := restartUserKey(b, end, i)
		if err != nil {
			serr = err
			return true
		}
		return bytes.Compare(k, key) >= 0
	})
	if serr != nil {
		return nil, 0, false, serr
	}
	// The same for the entries the scan decodes, each of which it finds
	// only once it has decoded the one before.
	from, to := 0, end
	if r > 0 {
		from = int(binary.LittleEndian.Uint32(b[end+4*(r-1):]))
	}
	if r < restarts {
		to = min(int(binary.LittleEndian.Uint32(b[end+4*r:])), end)
	}
	var touched byte
	for off := from + cacheLine; off < to; off += cacheLine {
		touched |= b[off]
	}
	runtime.KeepAlive(touched) // or the compiler drops the loads
	return scanBlock(b, end, r, key)
}

// cacheLine is the size of a CPU cache line, the step of seekBlock's
// loads ahead of its reads.
const cacheLine = 64

// scanBlock looks for key from the restart point before r, the first
// restart point whose key is not below key, to the first key above it.
func scanBlock(b []byte, end, r int, key []byte) (value []byte, kind byte, found bool, err error) {
	off := 0
	if r > 0 {
		off = int(binary.LittleEndian.Uint32(b[end+4*(r-1):]))
	}
	// Each key is built in one buffer from the previous one, held in the
	// other: the two take turns.
	var buf1, buf2 [128]byte
	prev, next := buf1[:0], buf2[:0]
	var k []byte
	for off < end {
		k, value, off, err = decodeEntry(b, off, end, prev, next)
		if err != nil {
			return nil, 0, false, err
		}
		uk, err := userKey(k)
		if err != nil {
			return nil, 0, false, err
		}
		switch c := bytes.Compare(uk, key); {
		case c == 0:
			return value, k[len(k)-8], true, nil
		case c > 0:
			return nil, 0, false, nil
		}
		prev, next = k, prev
	}
	return nil, 0, false, nil
}

// forEachEntry calls fn with every entry of a block in order. The key
// passed is only valid during the call.
func forEachEntry(b []byte, fn func(key, value []byte) error) error {
	end, _, err := blockLayout(b)
	if err != nil {
		return err
	}
	// Keys are built in two buffers taking turns, as in seekBlock.
	var buf1, buf2 [128]byte
	prev, next := buf1[:0], buf2[:0]
	var k, v []byte
	for off := 0; off < end; {
		k, v, off, err = decodeEntry(b, off, end, prev, next)
		if err != nil {
			return err
		}
		if err := fn(k, v); err != nil {
			return err
		}
		prev, next = k, prev
	}
	return nil
}

// filterBlock is a table's filter block: one filter per 2^baseLg bytes of
// data block offsets, then the filters' offsets, the offset of that array
// and baseLg.
type filterBlock struct {
	bloom   filter.Filter
	data    []byte
	offsets int // where the array of filter offsets starts
	num     int
	baseLg  uint
}

func newFilterBlock(b []byte) (filterBlock, error) {
	if len(b) < 5 {
		return filterBlock{}, errors.New("shorter than its trailer")
	}
	m := len(b) - 5
	offsets := int(binary.LittleEndian.Uint32(b[m:]))
	if offsets > m {
		return filterBlock{}, fmt.Errorf("filter offsets at %d past %d", offsets, m)
	}
	// The bits per key the filter was made with matter only to writers.
	return filterBlock{bloom: filter.NewBloomFilter(10), data: b, offsets: offsets, num: (m - offsets) / 4, baseLg: uint(b[len(b)-1])}, nil
}

// mayContain reports whether the data block at blockOffset may hold key;
// false is certain.
func (f filterBlock) mayContain(blockOffset uint64, key []byte) bool {
	if f.baseLg >= 64 {
		return true
	}
	i := blockOffset >> f.baseLg
	if i >= uint64(f.num) {
		return true
	}
	o := f.data[f.offsets+int(i)*4:]
	from, to := binary.LittleEndian.Uint32(o), binary.LittleEndian.Uint32(o[4:])
	switch {
	case from < to && int(to) <= f.offsets:
		return f.bloom.Contains(f.data[from:to], key)
	case from == to:
		return false
	}
	return true
}
