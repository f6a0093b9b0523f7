package loader

import (
	"bufio"
	"bytes"
	"container/heap"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// The general path's records are buffered up to Options.SpillBytes in
// all; beyond it every partition's buffered records are sorted and
// written to a spill file beside the partition (with their ordinals, one
// record per key when the load resolves duplicates). At the end, a
// partition that never spilled writes its buffer as its one run; one
// that did merges its spill files and its last buffer, through a heap,
// into its one run, resolving equal keys as they meet (deduper), and
// removes the files. So a partition is one run whatever the key order of
// the files, and memory is the buffer, not the version; the cost is a
// second write and read of the spilled records.

// maxMerge bounds the spill files merged at once (open files, and a read
// buffer each); beyond it the oldest are first merged into one file.
const maxMerge = 64

// spillReadBuffer is each merged spill file's read buffer.
const spillReadBuffer = 32 << 10

// emitter returns what passes a partition's records, in (key, ordinal)
// order, on to out: through a deduper when the load resolves duplicates
// (flush then passes the record it holds back), else straight.
func (st *loadState) emitter(out func(k, v []byte, ord uint64) error) (emit func(k, v []byte, ord uint64) error, flush func() error) {
	if !st.dedup {
		return out, func() error { return nil }
	}
	d := &deduper{st: st, policy: st.layout.Duplicates, emit: out}
	return d.add, func() error {
		err := d.flush()
		st.duplicates.Add(d.duplicates)
		return err
	}
}

// drain passes the records of the sorted buffer b through emitter to
// out.
func (st *loadState) drain(b *buffer, out func(k, v []byte, ord uint64) error) error {
	emit, flush := st.emitter(out)
	for i := range b.entries {
		k, v := b.record(i)
		if err := emit(k, v, b.ordOf(b.entries[i])); err != nil {
			return err
		}
	}
	return flush()
}

// writeSpill writes b sorted as one of partition p's spill files.
func (st *loadState) writeSpill(p int, b *buffer) error {
	b.sort()
	w, err := st.createSpill(p)
	if err != nil {
		return err
	}
	if err := st.drain(b, w.add); err != nil {
		w.abort()
		return err
	}
	name, err := w.close()
	if err != nil {
		return err
	}
	st.spills[p] = append(st.spills[p], name)
	return nil
}

// mergeSpills merges partition p's spill files and its last buffer b
// into the partition's one run, and removes the files.
func (st *loadState) mergeSpills(p int, b *buffer) error {
	names := st.spills[p]
	st.spills[p] = nil
	defer func() {
		for _, n := range names {
			os.Remove(n)
		}
	}()
	for len(names) > maxMerge {
		w, err := st.createSpill(p)
		if err != nil {
			return err
		}
		if err := st.merge(names[:maxMerge], nil, w.add); err != nil {
			w.abort()
			return err
		}
		name, err := w.close()
		if err != nil {
			return err
		}
		for _, n := range names[:maxMerge] {
			os.Remove(n)
		}
		names = append(names[maxMerge:], name)
	}
	b.sort()
	return st.buildRun(p, func(out func(k, v []byte, ord uint64) error) error { return st.merge(names, b, out) })
}

// merge passes the records of the spill files and of the sorted buffer
// b (nil for none) to out in (key, ordinal) order, through emitter.
func (st *loadState) merge(names []string, b *buffer, out func(k, v []byte, ord uint64) error) error {
	h := make(mergeHeap, 0, len(names)+1)
	defer func() {
		for _, in := range h {
			in.close()
		}
	}()
	add := func(in *mergeInput) error {
		ok, err := in.next()
		if err != nil || !ok {
			in.close()
			return err
		}
		h = append(h, in)
		return nil
	}
	for _, name := range names {
		r, err := openSpill(name)
		if err != nil {
			return err
		}
		if err := add(r); err != nil {
			return err
		}
	}
	if b != nil && len(b.entries) > 0 {
		if err := add(bufferInput(b)); err != nil {
			return err
		}
	}
	heap.Init(&h)
	emit, flush := st.emitter(out)
	for h.Len() > 0 {
		in := h[0]
		if err := emit(in.key, in.val, in.ord); err != nil {
			return err
		}
		ok, err := in.next()
		if err != nil {
			return err
		}
		if ok {
			heap.Fix(&h, 0)
		} else {
			heap.Pop(&h)
			in.close()
		}
	}
	return flush()
}

// spillWriter writes a spill file: [klen uvarint][vlen uvarint][ord 8
// bytes big-endian][key][value] per record.
type spillWriter struct {
	f   *os.File
	w   *bufio.Writer
	tmp []byte
}

func (st *loadState) createSpill(p int) (*spillWriter, error) {
	st.spillSeq[p]++
	f, err := os.Create(filepath.Join(st.req.Dir(p), fmt.Sprintf("spill-%06d.tmp", st.spillSeq[p])))
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
	if _, err := s.w.Write(val); err != nil {
		return localErr(err)
	}
	return nil
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

func (s *spillWriter) abort() {
	s.f.Close()
	os.Remove(s.f.Name())
}

// maxSpillRecord bounds a record read back from a spill file: the files
// are the loader's own, but a damaged disk must not make it allocate
// without bound.
const maxSpillRecord = 1 << 30

// mergeInput is one sorted input of a merge: a spill file or a buffer.
type mergeInput struct {
	key, val []byte
	ord      uint64
	next     func() (bool, error)
	close    func()
}

// openSpill opens a spill file for a merge; close closes it (the merge's
// caller removes it).
func openSpill(name string) (*mergeInput, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, localErr(err)
	}
	r := bufio.NewReaderSize(f, spillReadBuffer)
	in := &mergeInput{close: func() { f.Close() }}
	fail := func(err error) (bool, error) {
		return false, localErr(fmt.Errorf("reading %s: %w", name, err))
	}
	in.next = func() (bool, error) {
		kl, err := binary.ReadUvarint(r)
		if err == io.EOF {
			return false, nil
		}
		if err != nil {
			return fail(err)
		}
		vl, err := binary.ReadUvarint(r)
		if err != nil {
			return fail(err)
		}
		if kl > maxSpillRecord || vl > maxSpillRecord {
			return fail(fmt.Errorf("record of %d+%d bytes", kl, vl))
		}
		var ob [8]byte
		if _, err := io.ReadFull(r, ob[:]); err != nil {
			return fail(err)
		}
		in.key = grow(in.key, int(kl))
		if _, err := io.ReadFull(r, in.key); err != nil {
			return fail(err)
		}
		in.val = grow(in.val, int(vl))
		if _, err := io.ReadFull(r, in.val); err != nil {
			return fail(err)
		}
		in.ord = binary.BigEndian.Uint64(ob[:])
		return true, nil
	}
	return in, nil
}

// bufferInput reads a sorted buffer in place.
func bufferInput(b *buffer) *mergeInput {
	i := 0
	in := &mergeInput{close: func() {}}
	in.next = func() (bool, error) {
		if i >= len(b.entries) {
			return false, nil
		}
		in.key, in.val = b.record(i)
		in.ord = b.ordOf(b.entries[i])
		i++
		return true, nil
	}
	return in
}

func grow(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, n)
	}
	return b[:n]
}

// mergeHeap orders merge inputs by their current (key, ordinal).
type mergeHeap []*mergeInput

func (h mergeHeap) Len() int { return len(h) }
func (h mergeHeap) Less(i, j int) bool {
	if c := bytes.Compare(h[i].key, h[j].key); c != 0 {
		return c < 0
	}
	return h[i].ord < h[j].ord
}
func (h mergeHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *mergeHeap) Push(x any)   { *h = append(*h, x.(*mergeInput)) }
func (h *mergeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
