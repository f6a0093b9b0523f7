package loader

import (
	"bufio"
	"bytes"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
)

// Duplicates says what a load does with a key that two records hold.
type Duplicates int

// The policies of Layout.Duplicates.
const (
	// DuplicatesAny keeps one of the values, which one undefined: sequins'
	// rule, and the cheapest (SequenceFile, Sparkey).
	DuplicatesAny Duplicates = iota
	// DuplicatesError fails the load, naming the key and both records.
	DuplicatesError
	// DuplicatesFirst keeps the first record: by file name, then by its
	// place in the file.
	DuplicatesFirst
	// DuplicatesLast keeps the last record, in the same order.
	DuplicatesLast
)

// ErrDuplicateKey is returned when two records hold the same key and the
// layout says DuplicatesError. It is bad data: loading again fails again.
var ErrDuplicateKey = errors.New("loader: duplicate key")

// ordinals: a record's place in the version, compared when two records
// hold one key. The unit's index (units are in file name order) is above
// the record's number in its unit, counted from 1.
const ordRecordBits = 40

func ordinal(unit int, record int64) uint64 {
	return uint64(unit)<<ordRecordBits | uint64(record)
}

// where names the record at ord in errors: the file and the record's
// number in it (for Parquet, the row from 1).
func (st *loadState) where(ord uint64) string {
	u := int(ord >> ordRecordBits)
	n := ord & (1<<ordRecordBits - 1)
	if u >= len(st.layout.Units) {
		return "record " + strconv.FormatUint(ord, 10)
	}
	return st.in.Path(st.layout.Units[u].Files[0]) + " record " + strconv.FormatUint(n, 10)
}

// maxQuotedKey bounds how much of a key an error quotes.
const maxQuotedKey = 128

func quoteKey(k []byte) string {
	if len(k) > maxQuotedKey {
		return strconv.Quote(string(k[:maxQuotedKey])) + "..."
	}
	return strconv.Quote(string(k))
}

// deduper receives records in (key, ordinal) order and passes one record
// per key on to emit, as the policy says. Not safe for concurrent use.
type deduper struct {
	st     *loadState
	policy Duplicates
	emit   func(key, val []byte, ord uint64) error

	has        bool
	key, val   []byte // the record held back: a later one may replace it
	ord        uint64
	duplicates int64
}

func (d *deduper) add(key, val []byte, ord uint64) error {
	if d.has && bytes.Equal(key, d.key) {
		d.duplicates++
		switch d.policy {
		case DuplicatesFirst:
			return nil
		case DuplicatesLast:
			d.val = append(d.val[:0], val...)
			d.ord = ord
			return nil
		default:
			return fmt.Errorf("%w %s: in %s and in %s (the db's _FORMAT says duplicates = \"error\", the default; \"first\" or \"last\" keeps one of them)",
				ErrDuplicateKey, quoteKey(key), d.st.where(d.ord), d.st.where(ord))
		}
	}
	if err := d.flush(); err != nil {
		return err
	}
	d.key = append(d.key[:0], key...)
	d.val = append(d.val[:0], val...)
	d.ord, d.has = ord, true
	return nil
}

// flush passes the held record on.
func (d *deduper) flush() error {
	if !d.has {
		return nil
	}
	d.has = false
	return d.emit(d.key, d.val, d.ord)
}

// spillFile is one sorted, deduplicated part of a partition's records,
// with their ordinals, written when the records of a load that resolves
// duplicates do not fit its buffers: [klen uvarint][vlen uvarint][ord 8
// bytes big-endian][key][value] per record. The files are merged into the
// partition's one run when the load ends, and removed.
type spillWriter struct {
	f   *os.File
	w   *bufio.Writer
	tmp []byte
}

func createSpill(dir string, n int) (*spillWriter, error) {
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("spill-%06d.tmp", n)))
	if err != nil {
		return nil, localErr(err)
	}
	return &spillWriter{f: f, w: bufio.NewWriterSize(f, 256<<10)}, nil
}

func (s *spillWriter) add(key, val []byte, ord uint64) error {
	s.tmp = binary.AppendUvarint(s.tmp[:0], uint64(len(key)))
	s.tmp = binary.AppendUvarint(s.tmp, uint64(len(val)))
	s.tmp = binary.BigEndian.AppendUint64(s.tmp, ord)
	s.w.Write(s.tmp)
	s.w.Write(key)
	_, err := s.w.Write(val)
	return err
}

// close finishes the file and returns its name.
func (s *spillWriter) close() (string, error) {
	err := s.w.Flush()
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(s.f.Name())
		return "", localErr(err)
	}
	return s.f.Name(), nil
}

// maxSpillRecord bounds a record read back from a spill file: the files
// are the loader's own, but a damaged disk must not make it allocate
// without bound.
const maxSpillRecord = 1 << 30

type spillReader struct {
	f        *os.File
	r        *bufio.Reader
	key, val []byte
	ord      uint64
}

func openSpill(name string) (*spillReader, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, localErr(err)
	}
	return &spillReader{f: f, r: bufio.NewReaderSize(f, 64<<10)}, nil
}

// next reads the next record; false at the end.
func (s *spillReader) next() (bool, error) {
	kl, err := binary.ReadUvarint(s.r)
	if err == io.EOF {
		return false, nil
	}
	if err != nil {
		return false, localErr(fmt.Errorf("reading %s: %w", s.f.Name(), err))
	}
	vl, err := binary.ReadUvarint(s.r)
	if err == nil && (kl > maxSpillRecord || vl > maxSpillRecord) {
		err = fmt.Errorf("record of %d+%d bytes", kl, vl)
	}
	var ob [8]byte
	if err == nil {
		_, err = io.ReadFull(s.r, ob[:])
	}
	if err == nil {
		s.key = grow(s.key, int(kl))
		_, err = io.ReadFull(s.r, s.key)
	}
	if err == nil {
		s.val = grow(s.val, int(vl))
		_, err = io.ReadFull(s.r, s.val)
	}
	if err != nil {
		return false, localErr(fmt.Errorf("reading %s: %w", s.f.Name(), err))
	}
	s.ord = binary.BigEndian.Uint64(ob[:])
	return true, nil
}

func grow(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, n)
	}
	return b[:n]
}

func (s *spillReader) close() {
	s.f.Close()
	os.Remove(s.f.Name())
}

// spillHeap orders spill readers by their current (key, ordinal).
type spillHeap []*spillReader

func (h spillHeap) Len() int { return len(h) }
func (h spillHeap) Less(i, j int) bool {
	if c := bytes.Compare(h[i].key, h[j].key); c != 0 {
		return c < 0
	}
	return h[i].ord < h[j].ord
}
func (h spillHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *spillHeap) Push(x any)   { *h = append(*h, x.(*spillReader)) }
func (h *spillHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// mergeSpills merges partition p's spill files into one run, one record
// per key as the layout's policy says, and removes them.
func (st *loadState) mergeSpills(p int, names []string) (err error) {
	h := make(spillHeap, 0, len(names))
	defer func() {
		for _, r := range h {
			r.close()
		}
	}()
	for _, name := range names {
		r, err := openSpill(name)
		if err != nil {
			return err
		}
		ok, err := r.next()
		if err != nil || !ok {
			r.close()
			if err != nil {
				return err
			}
			continue
		}
		h = append(h, r)
	}
	heap.Init(&h)
	w, err := st.builders[p].NewRun()
	if err != nil {
		return localErr(err)
	}
	d := &deduper{st: st, policy: st.layout.Duplicates, emit: func(k, v []byte, _ uint64) error {
		if err := w.Append(k, v); err != nil {
			return localErr(err)
		}
		return nil
	}}
	fail := func(err error) error {
		w.Abort()
		return err
	}
	for h.Len() > 0 {
		r := h[0]
		if err := d.add(r.key, r.val, r.ord); err != nil {
			return fail(err)
		}
		ok, err := r.next()
		if err != nil {
			return fail(err)
		}
		if ok {
			heap.Fix(&h, 0)
		} else {
			heap.Pop(&h)
			r.close()
		}
	}
	if err := d.flush(); err != nil {
		return fail(err)
	}
	st.duplicates.Add(d.duplicates)
	st.runs.Add(1)
	if err := w.Close(); err != nil {
		return localErr(err)
	}
	return nil
}
