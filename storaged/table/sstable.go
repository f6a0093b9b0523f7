package table

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"sort"

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

// sstable is one LevelDB table file opened for point lookups: its index and
// filter stay in memory, its data blocks are read on demand through the
// node's block cache. It is safe for concurrent use until closed.
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

	// filter is the filter block's data; nil when the table has no bloom
	// filter this reader knows.
	filter filterBlock
}

// openTable opens a table file and reads its index and filter.
func openTable(path string, blocks *blockcache.Cache) (*sstable, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("table: %w", err)
	}
	t := &sstable{f: f, name: path, blocks: blocks, id: blocks.NewTableID()}
	if err := t.readMeta(); err != nil {
		f.Close()
		return nil, err
	}
	return t, nil
}

func (t *sstable) readMeta() error {
	fi, err := t.f.Stat()
	if err != nil {
		return fmt.Errorf("table: %w", err)
	}
	t.size = uint64(fi.Size())
	if t.size < footerLen {
		return t.corrupt(0, "file of %d bytes is shorter than a footer", t.size)
	}
	var footer [footerLen]byte
	if _, err := t.f.ReadAt(footer[:], int64(t.size-footerLen)); err != nil {
		return fmt.Errorf("table: reading %s: %w", t.name, err)
	}
	if binary.LittleEndian.Uint64(footer[footerLen-8:]) != tableMagic {
		return t.corrupt(t.size-footerLen, "bad magic number")
	}
	metaBH, n := decodeBlockHandle(footer[:])
	if n == 0 {
		return t.corrupt(t.size-footerLen, "bad metaindex handle")
	}
	indexBH, m := decodeBlockHandle(footer[n:])
	if m == 0 {
		return t.corrupt(t.size-footerLen, "bad index handle")
	}

	meta, err := t.readBlock(metaBH)
	if err != nil {
		return err
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
		return t.corrupt(metaBH.offset, "metaindex: %v", err)
	}
	if filterBH.size > 0 {
		buf, err := t.readBlock(filterBH)
		if err != nil {
			return err
		}
		// The filter is kept for the table's life: on the heap, not in a
		// buffer of the block cache's, which are reused.
		data := bytes.Clone(buf)
		t.blocks.Discard(blockcache.Key{Table: t.id, Offset: filterBH.offset}, buf)
		if t.filter, err = newFilterBlock(data); err != nil {
			return t.corrupt(filterBH.offset, "filter: %v", err)
		}
	}

	index, err := t.readBlock(indexBH)
	if err != nil {
		return err
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
		return t.corrupt(indexBH.offset, "index: %v", err)
	}
	// The index is kept for the table's life: drop append's slack.
	t.seps = bytes.Clone(t.seps)
	return nil
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
	i := sort.Search(len(t.handles), func(i int) bool { return bytes.Compare(t.sep(i), key) >= 0 })
	if i == len(t.handles) {
		return dst, false, false, nil
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
	return scanBlock(b, end, r, key)
}

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
