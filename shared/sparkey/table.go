package sparkey

import (
	"bytes"
	"encoding/binary"
	"math/bits"
)

// Table looks keys up in an uncompressed log and its uncompressed index
// held in memory (typically a mapping of the two files), as libsparkey's
// hash reader does: hash the key, probe the Robin Hood table from the
// key's home slot, read the entry a slot with the key's hash names. It
// never allocates, and every offset and length it reads is checked
// against the log's data end, so a damaged file gives a CorruptError, not
// a panic. It is safe for concurrent use.
//
// OpenTable checks only what a lookup relies on to stay in bounds. Walk
// and Check together check what the streaming Reader does and more: that
// the index's slots are exactly the log's live puts, each found by its
// key's probe, no key twice.
type Table struct {
	log, slots []byte
	lh         LogHeader
	ih         IndexHeader
	ss         uint64
	logName    string
	indexName  string
	// fastM, when not 0, is the multiplier of home's division-free
	// modulo: for 4-byte hashes and capacities under 2^32.
	fastM uint64
	// deferred are pairs of slots of one hash on one probe, whose keys
	// check could not compare without the log.
	deferred [][2]uint64
}

// OpenTable checks the headers of log and index (the whole files) and
// that the index is the log's, and returns a Table over them. Compressed
// logs are refused: their entries are reached through a block to
// decompress, not in place.
func OpenTable(log []byte, logName string, index []byte, indexName string) (*Table, error) {
	if len(log) < LogHeaderSize {
		return nil, corrupt(logName, int64(len(log)), nil, "truncated while reading the header")
	}
	lh, err := parseLogHeader(log[:LogHeaderSize], logName, int64(len(log)))
	if err != nil {
		return nil, err
	}
	return openTable(lh, log[:lh.DataEnd], logName, index, indexName)
}

// openTable is OpenTable given the log's header; log may be nil (the
// checks of IndexCheck, before the log is all there).
func openTable(lh LogHeader, log []byte, logName string, index []byte, indexName string) (*Table, error) {
	if lh.Compression != None {
		return nil, corrupt(logName, 64, nil, "a %s log cannot be read in place", lh.Compression)
	}
	if len(index) < IndexHeaderSize {
		return nil, corrupt(indexName, int64(len(index)), nil, "truncated while reading the header")
	}
	ih, err := parseIndexHeader(index[:IndexHeaderSize], indexName)
	if err != nil {
		return nil, err
	}
	switch {
	case ih.FileID != lh.FileID:
		return nil, corrupt(indexName, 12, nil, "index of log %#08x, not of %s (%#08x)", ih.FileID, logName, lh.FileID)
	case ih.DataEnd != lh.DataEnd || ih.Puts != lh.Puts:
		return nil, corrupt(indexName, 20, nil, "index of a log of %d bytes and %d puts, %s has %d and %d",
			ih.DataEnd, ih.Puts, logName, lh.DataEnd, lh.Puts)
	case ih.EntryBlockBits != 0:
		return nil, corrupt(indexName, 92, nil, "entry block bits %d for an uncompressed log", ih.EntryBlockBits)
	}
	// The capacity was bounded by the log's size; the file must hold
	// exactly its slots.
	ss := uint64(ih.SlotSize())
	if want := uint64(IndexHeaderSize) + ih.Capacity*ss; uint64(len(index)) != want {
		return nil, corrupt(indexName, int64(min(uint64(len(index)), want)), nil,
			"index of %d bytes, its %d slots take %d", len(index), ih.Capacity, want)
	}
	t := &Table{log: log, slots: index[IndexHeaderSize:], lh: lh, ih: ih, ss: ss,
		logName: logName, indexName: indexName}
	if ih.HashSize == 4 && ih.Capacity > 0 && ih.Capacity < 1<<32 {
		t.fastM = ^uint64(0)/ih.Capacity + 1
	}
	return t, nil
}

// Header returns the log's and the index's headers.
func (t *Table) Header() (LogHeader, IndexHeader) { return t.lh, t.ih }

// Hash returns the index's hash of key.
func (t *Table) Hash(key []byte) uint64 {
	if t.ih.HashSize == 4 {
		return uint64(Murmur32(key, t.ih.Seed))
	}
	return Murmur64(key, t.ih.Seed)
}

// slot returns slot i's hash and address.
func (t *Table) slot(i uint64) (hash, addr uint64) {
	le := binary.LittleEndian
	if t.ss == 8 {
		// 4-byte hash and address, libsparkey's usual: one load.
		x := le.Uint64(t.slots[i*8:])
		return x & 0xffffffff, x >> 32
	}
	b := t.slots[i*t.ss : (i+1)*t.ss]
	if t.ih.HashSize == 4 {
		hash = uint64(le.Uint32(b))
	} else {
		hash = le.Uint64(b)
	}
	if t.ih.AddressSize == 4 {
		addr = uint64(le.Uint32(b[t.ih.HashSize:]))
	} else {
		addr = le.Uint64(b[t.ih.HashSize:])
	}
	return hash, addr
}

// home returns the home slot of hash, hash modulo the capacity (not 0).
// A 4-byte hash is reduced without a division (Lemire's fastmod: a
// division was a third of checking an index).
func (t *Table) home(hash uint64) uint64 {
	if t.fastM != 0 {
		hi, _ := bits.Mul64(t.fastM*hash, t.ih.Capacity)
		return hi
	}
	return hash % t.ih.Capacity
}

// displacement is how far slot i is from the home slot of hash.
func (t *Table) displacement(i, hash uint64) uint64 {
	h := t.home(hash)
	if i >= h {
		return i - h
	}
	return i + t.ih.Capacity - h
}

// entry returns the key and value of the put at addr.
func (t *Table) entry(addr uint64) (key, val []byte, err error) {
	end := uint64(len(t.log))
	if addr < LogHeaderSize || addr >= end {
		return nil, nil, corrupt(t.indexName, 0, nil, "a slot names log address %d, outside the data of %s (%d..%d)",
			addr, t.logName, LogHeaderSize, end)
	}
	b := t.log[addr:]
	a, n1 := binary.Uvarint(b)
	if n1 <= 0 {
		return nil, nil, corrupt(t.logName, int64(addr), nil, "bad entry length")
	}
	v, n2 := binary.Uvarint(b[n1:])
	if n2 <= 0 {
		return nil, nil, corrupt(t.logName, int64(addr), nil, "bad entry length")
	}
	if a == 0 {
		return nil, nil, corrupt(t.indexName, 0, nil, "a slot names the delete at byte %d of %s", addr, t.logName)
	}
	klen, rest := a-1, uint64(len(b)-n1-n2)
	if klen > rest || v > rest-klen {
		return nil, nil, corrupt(t.logName, int64(addr), nil, "entry of a %d-byte key and %d-byte value runs past the data end %d",
			klen, v, end)
	}
	b = b[n1+n2:]
	return b[:klen:klen], b[klen : klen+v : klen+v], nil
}

// Get appends the value of key to dst and reports whether the key was
// found. The error is a CorruptError for a slot that names no put.
func (t *Table) Get(dst, key []byte) ([]byte, bool, error) {
	c := t.ih.Capacity
	if c == 0 {
		return dst, false, nil
	}
	h := t.Hash(key)
	i := t.home(h)
	for d := uint64(0); d < c; d++ {
		sh, addr := t.slot(i)
		if addr == 0 {
			return dst, false, nil
		}
		if sh == h {
			k, v, err := t.entry(addr)
			if err != nil {
				return dst, false, err
			}
			if bytes.Equal(k, key) {
				return append(dst, v...), true, nil
			}
		}
		// Robin Hood: the key would have displaced an entry nearer its
		// own home slot.
		if t.displacement(i, sh) < d {
			return dst, false, nil
		}
		if i++; i == c {
			i = 0
		}
	}
	return dst, false, nil
}

// maxDisplacement bounds how far a slot may be from its key's home, and
// so every probe: Robin Hood tables as full as libsparkey's displace by
// a few slots, tens at most.
const maxDisplacement = 1 << 16

// maxProbeWork bounds, with 64 slots per slot, the probe steps Check
// takes.
const maxProbeWork = 1 << 20

// Check checks that Get finds the key of every occupied slot at that
// slot: the probe from the key's home slot reaches it without meeting an
// empty slot, or an entry nearer its home, or another slot of the same
// key. With the Reader's checks (every slot names a live put of its hash,
// the counts agree) this makes every live key of the log found, and only
// its latest value. Each slot's probe is as long as its displacement.
func (t *Table) Check() error {
	_, err := t.check()
	return err
}

// check is Check, and returns the order-free sum of the occupied slots'
// (address, hash) (see mix).
func (t *Table) check() (uint64, error) {
	c := t.ih.Capacity
	var sum uint64
	var n, total uint64
	for i := uint64(0); i < c; i++ {
		h, addr := t.slot(i)
		if addr == 0 {
			continue
		}
		n++
		sum += mix(addr, h)
		d := t.displacement(i, h)
		// A Robin Hood table filled to libsparkey's 77% displaces its
		// entries by a slot or two on average; a damaged one could make
		// the walk quadratic.
		if d > maxDisplacement {
			return 0, corrupt(t.indexName, int64(IndexHeaderSize+i*t.ss), nil, "slot %d is %d slots from its home", i, d)
		}
		if total += d; total > maxProbeWork+64*c {
			return 0, corrupt(t.indexName, int64(IndexHeaderSize+i*t.ss), nil, "displacements out of proportion to %d slots", c)
		}
		var key []byte
		for j, dj := t.home(h), uint64(0); dj < d; dj++ {
			oh, oaddr := t.slot(j)
			off := int64(IndexHeaderSize + j*t.ss)
			if oaddr == 0 {
				return 0, corrupt(t.indexName, off, nil, "slot %d is empty, between slot %d and its key's home", j, i)
			}
			if t.displacement(j, oh) < dj {
				return 0, corrupt(t.indexName, off, nil, "slot %d is nearer its home than slot %d's key, which lies beyond it", j, i)
			}
			if oh == h && t.log == nil {
				// Compared once the log is there (IndexCheck.Finish).
				t.deferred = append(t.deferred, [2]uint64{oaddr, addr})
			} else if oh == h {
				if key == nil {
					k, _, err := t.entry(addr)
					if err != nil {
						return 0, err
					}
					key = k
				}
				k, _, err := t.entry(oaddr)
				if err != nil {
					return 0, err
				}
				if bytes.Equal(k, key) {
					return 0, corrupt(t.indexName, off, nil, "slots %d and %d hold the same key", j, i)
				}
			}
			if j++; j == c {
				j = 0
			}
		}
	}
	if n != t.ih.Entries {
		return 0, corrupt(t.indexName, 60, nil, "header counts %d entries, the table holds %d", t.ih.Entries, n)
	}
	return sum, nil
}

// Walk runs Check, then reads every entry of the log in order and calls fn with each put
// the index names (the live ones) and its offset, checking on the way
// what the streaming Reader checks: entries within the data and the
// header's limits, the header's counts of puts and deletes, and an index
// whose occupied slots are exactly the live puts: each put is looked for
// by its key's probe, and found slots must number the header's entries.
// An index slot naming anything else, or a live put the probe cannot
// find, is a CorruptError. fn's error stops the walk and is returned.
func (t *Table) Walk(fn func(key []byte, off int64) error) error {
	slotSum, err := t.check()
	if err != nil {
		return err
	}
	// The usual job output: no deletes, no overwritten puts. Every put is
	// then live, and the slots are checked against the puts by a sum over
	// each, in file order, rather than by a probe per put.
	everyPut := t.lh.Deletes == 0 && t.ih.Entries == t.lh.Puts
	var putSum uint64
	var puts, deletes, live uint64
	end := uint64(len(t.log))
	for off := uint64(LogHeaderSize); off < end; {
		b := t.log[off:]
		a, n1 := binary.Uvarint(b)
		var v uint64
		n2 := 0
		if n1 > 0 {
			v, n2 = binary.Uvarint(b[n1:])
		}
		if n1 <= 0 || n2 <= 0 {
			return corrupt(t.logName, int64(off), nil, "bad or cut off entry length")
		}
		var klen uint64
		if a == 0 {
			klen, v = v, 0
		} else {
			klen = a - 1
		}
		if klen > t.lh.MaxKeyLen || v > t.lh.MaxValueLen {
			return corrupt(t.logName, int64(off), nil, "entry of a %d-byte key and %d-byte value; the header's limits are %d and %d",
				klen, v, t.lh.MaxKeyLen, t.lh.MaxValueLen)
		}
		rest := uint64(len(b) - n1 - n2)
		if klen > rest || v > rest-klen {
			return corrupt(t.logName, int64(off), nil, "entry of %d bytes runs past the data end %d", klen+v, end)
		}
		key := b[n1+n2 : uint64(n1+n2)+klen]
		at := off
		off += uint64(n1+n2) + klen + v
		if a == 0 {
			deletes++
			continue
		}
		puts++
		if everyPut {
			putSum += mix(at, t.Hash(key))
		} else if !t.names(key, at) {
			continue
		}
		live++
		if err := fn(key, int64(at)); err != nil {
			return err
		}
	}
	switch {
	case puts != t.lh.Puts || deletes != t.lh.Deletes:
		return corrupt(t.logName, 16, nil, "header counts %d puts and %d deletes, the data holds %d and %d",
			t.lh.Puts, t.lh.Deletes, puts, deletes)
	case everyPut && putSum != slotSum:
		return corrupt(t.indexName, IndexHeaderSize, nil, "the table's slots do not match the puts of %s", t.logName)
	case live != t.ih.Entries:
		return corrupt(t.indexName, 60, nil, "the index counts %d entries, %d of them name a put of %s that its key's probe finds",
			t.ih.Entries, live, t.logName)
	}
	return nil
}

// names reports whether the probe for key finds a slot naming addr.
func (t *Table) names(key []byte, addr uint64) bool {
	c := t.ih.Capacity
	if c == 0 {
		return false
	}
	h := t.Hash(key)
	i := t.home(h)
	for d := uint64(0); d < c; d++ {
		sh, a := t.slot(i)
		if a == 0 {
			return false
		}
		if sh == h && a == addr {
			return true
		}
		if t.displacement(i, sh) < d {
			return false
		}
		if i++; i == c {
			i = 0
		}
	}
	return false
}

// IndexCheck checks a log's entries as they stream past against its
// index, held in memory: what Walk checks, for a log being copied, so
// that it is read once. Put is called with every put in log order, then
// Finish with the whole log.
type IndexCheck struct {
	t        *Table
	everyPut bool
	slotSum  uint64
	putSum   uint64
	live     uint64
}

// NewIndexCheck checks the index (as Check does, but for comparing keys
// of equal hashes, which waits for Finish) of a log of header lh.
func NewIndexCheck(lh LogHeader, logName string, index []byte, indexName string) (*IndexCheck, error) {
	t, err := openTable(lh, nil, logName, index, indexName)
	if err != nil {
		return nil, err
	}
	sum, err := t.check()
	if err != nil {
		return nil, err
	}
	return &IndexCheck{t: t, everyPut: lh.Deletes == 0 && t.ih.Entries == lh.Puts, slotSum: sum}, nil
}

// Put reports whether the put of key at byte off of the log is live.
func (c *IndexCheck) Put(key []byte, off int64) bool {
	if c.everyPut {
		c.putSum += mix(uint64(off), c.t.Hash(key))
		c.live++
		return true
	}
	if c.t.names(key, uint64(off)) {
		c.live++
		return true
	}
	return false
}

// Finish checks that the puts were the index's, and compares the keys of
// slots of equal hashes on one probe in log, the whole log file (whose
// entries the caller read through a LogReader, which checked them).
func (c *IndexCheck) Finish(log []byte) error {
	t := c.t
	switch {
	case c.everyPut && c.putSum != c.slotSum:
		return corrupt(t.indexName, IndexHeaderSize, nil, "the table's slots do not match the puts of %s", t.logName)
	case c.live != t.ih.Entries:
		return corrupt(t.indexName, 60, nil, "the index counts %d entries, %d of them name a put of %s that its key's probe finds",
			t.ih.Entries, c.live, t.logName)
	case uint64(len(log)) < t.lh.DataEnd:
		return corrupt(t.logName, int64(len(log)), nil, "truncated before the data end %d", t.lh.DataEnd)
	}
	t.log = log[:t.lh.DataEnd]
	for _, d := range t.deferred {
		a, _, err := t.entry(d[0])
		if err != nil {
			return err
		}
		b, _, err := t.entry(d[1])
		if err != nil {
			return err
		}
		if bytes.Equal(a, b) {
			return corrupt(t.indexName, 0, nil, "two slots hold the key at byte %d of %s (and at byte %d)", d[0], t.logName, d[1])
		}
	}
	return nil
}
