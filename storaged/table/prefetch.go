package table

import (
	"bytes"
	"encoding/binary"
	"runtime"
	"runtime/debug"
	"sort"
)

// Prefetch readies the lookups of many keys at once (a batch): for each
// key added, the data block of a mapped table it would be searched in,
// then Run reads, for all of them together, the bytes their lookups read
// first (each block's restart array, then its restart entries, then the
// entries its scan will decode), a pass at a time. Each Get alone waits
// for its block's memory three times in turn (the restart count, the
// restart entries, the entries scanned), one miss after another; Run
// asks for all the blocks' lines of one step before any of the next
// step's, loads that do not wait on each other, so the misses of the
// keys overlap and the Gets that follow find their lines in the CPU's
// caches. It only reads: what a Get returns does not depend on it, and
// a key it cannot place (a table read through the block cache, a
// Snappy block, a Sparkey pair, a block that does not parse) is left to
// its Get as it is.
//
// A Prefetch is reused from one batch to the next (Reset); it is not
// safe for concurrent use.
type Prefetch struct {
	spots  []spot
	tables []*sstable // entered by Run, left before it returns
}

// spot is one key's block in a mapped table.
type spot struct {
	t   *sstable
	i   int    // the data block
	key []byte // the caller's; kept until Reset
	// Filled by Run: the block (with its type byte until pass 2, then
	// without) and where its entries end, or b nil when it is not to be
	// read on.
	b        []byte
	end      int
	restarts int
	r        int // the first restart point whose key is not below key
	from, to int // the entries the scan decodes
}

// maxPrefetch bounds the keys a Prefetch takes: a batch bigger than that
// gets the first ones readied, the rest looked up as they come (beyond a
// few hundred blocks, the first would be out of the caches again by the
// time their Gets come).
const maxPrefetch = 1024

// Reset empties f for the next batch, dropping the keys it holds, and
// ends its use of the tables' mappings (Run's): a Prefetch that ran
// must be reset once its Gets are done.
func (f *Prefetch) Reset() {
	f.leave()
	clear(f.spots)
	f.spots = f.spots[:0]
}

// Len is the number of keys f will ready.
func (f *Prefetch) Len() int { return len(f.spots) }

// AddPrefetch notes key's block in p, if a Get of key would search one
// of p's mapped tables first, and returns the key's place in f for
// f.Get, or -1. key is kept until Reset and must not change meanwhile.
func (p *Partition) AddPrefetch(f *Prefetch, key []byte) int {
	if len(f.spots) >= maxPrefetch {
		return -1
	}
	for i := range p.tables {
		t := &p.tables[i]
		if bytes.Compare(key, t.smallest) < 0 || bytes.Compare(key, t.largest) > 0 {
			continue
		}
		// The first table whose range holds key: Get searches it first.
		if t.mapped == nil {
			return -1
		}
		b := t.search(key)
		if b == len(t.handles) {
			return -1
		}
		f.spots = append(f.spots, spot{t: t.sstable, i: b, key: key})
		return len(f.spots) - 1
	}
	return -1
}

// Run reads what the lookups of the keys added will read first, in
// passes over all of them. A block that does not parse is left
// out from then on; a fault reading the mapping (a file cut short under
// it) ends Run, and the Get of that key reports it.
func (f *Prefetch) Run() {
	if len(f.spots) == 0 {
		return
	}
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(interface{ Addr() uintptr }); !ok {
				panic(r)
			}
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	var sink byte
	// Pass 1: each block's type byte and restart count, at its end.
	for j := range f.spots {
		s := &f.spots[j]
		if !f.enter(s.t) {
			continue
		}
		bh := s.t.handles[s.i] // within the file: checked as the index was read
		raw := s.t.mapped[bh.offset : bh.offset+bh.size+1 : bh.offset+bh.size+1]
		n := int(bh.size)
		if n < 4 {
			continue
		}
		sink |= raw[n] | raw[n-4]
		s.b = raw
	}
	// Pass 2: the first byte of each restart entry.
	for j := range f.spots {
		s := &f.spots[j]
		if s.b == nil {
			continue
		}
		if s.b[len(s.b)-1] != blockPlain {
			s.b = nil
			continue
		}
		s.b = s.b[:len(s.b)-1]
		end, restarts, err := blockLayout(s.b)
		if err != nil {
			s.b = nil
			continue
		}
		s.end, s.restarts = end, restarts
		// The byte read is the entry's shared length, 0 at a restart
		// point: a block where it is not is left to Get, which reports
		// it (seekBlock reads the same bytes).
		var shared byte
		for i := 0; i < restarts; i++ {
			if off := int(binary.LittleEndian.Uint32(s.b[end+4*i:])); off < end {
				shared |= s.b[off]
			}
		}
		if shared != 0 {
			s.b = nil
		}
	}
	// Pass 3: the range of entries each scan will decode, from the
	// restart point before the first whose key is not below the key
	// sought (the restart entries are in the caches now).
	for j := range f.spots {
		s := &f.spots[j]
		if s.b == nil {
			continue
		}
		bad := false
		r := sort.Search(s.restarts, func(i int) bool {
			k, err := restartUserKey(s.b, s.end, i)
			if err != nil {
				bad = true
				return true
			}
			return bytes.Compare(k, s.key) >= 0
		})
		if bad {
			s.b = nil
			continue
		}
		s.r = r
		s.from, s.to = 0, s.end
		if r > 0 {
			s.from = int(binary.LittleEndian.Uint32(s.b[s.end+4*(r-1):]))
		}
		if r < s.restarts {
			s.to = min(int(binary.LittleEndian.Uint32(s.b[s.end+4*r:])), s.end)
		}
	}
	// Pass 4: a byte of each line of those ranges, in a loop of its own
	// so that many of its loads are under way at once.
	for j := range f.spots {
		s := &f.spots[j]
		if s.b == nil {
			continue
		}
		for off := s.from; off < s.to; off += cacheLine {
			sink |= s.b[off]
		}
	}
	runtime.KeepAlive(sink) // or the compiler drops the loads
}

// enter begins Run's use of t's mapping, once per table; false when t is
// closed.
func (f *Prefetch) enter(t *sstable) bool {
	for _, e := range f.tables {
		if e == t {
			return true
		}
	}
	if !t.enter() {
		return false
	}
	f.tables = append(f.tables, t)
	return true
}

// Get appends the value of the key added as j (AddPrefetch) to dst, from
// where Run found its entries: a key found in a block whose checksum a
// lookup has checked already. ok is false for any other (not found
// there, a deletion, a block not checked or not parsed, j < 0): the
// caller then looks it up with Partition.Get, which says what it is.
func (f *Prefetch) Get(dst []byte, j int) (value []byte, ok bool) {
	if j < 0 || j >= len(f.spots) {
		return dst, false
	}
	s := &f.spots[j]
	if s.b == nil || !s.t.checked[s.i].Load() {
		return dst, false
	}
	return s.get(dst)
}

// get scans s's block for its key, the mapping read as getMapped reads
// it: a fault there gives ok false, and the Get after it reports the
// block.
func (s *spot) get(dst []byte) (value []byte, ok bool) {
	defer func(panicOnFault bool) {
		debug.SetPanicOnFault(panicOnFault)
		if r := recover(); r != nil {
			if _, fault := r.(interface{ Addr() uintptr }); !fault {
				panic(r)
			}
			value, ok = dst, false
		}
	}(debug.SetPanicOnFault(true))
	v, kind, found, err := scanBlock(s.b, s.end, s.r, s.key)
	if err != nil || !found || kind != keyTypeValue {
		return dst, false
	}
	return append(dst, v...), true
}

// leave ends Run's uses of the tables' mappings.
func (f *Prefetch) leave() {
	for _, t := range f.tables {
		t.leave()
	}
	clear(f.tables)
	f.tables = f.tables[:0]
}
