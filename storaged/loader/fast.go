package loader

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"spangle/shared/partitioner"
	"spangle/shared/source"
	"spangle/storaged/table"
)

// A unit whose records are one sorted partition streams them straight
// into a run of that partition (the fast path), no buffer, no sort. In a
// load that resolves duplicate keys the run must be the partition's only
// source for the check to be free:
//
//   - a unit holds its first pendingRecords records (pendingBytes at most)
//     back before it starts a run, so an unsorted unit, which breaks the
//     order within a few records, puts them in the buffers and writes no
//     run at all;
//   - only one unit streams a run into a partition (claimed), and equal
//     adjacent keys in it are resolved as they stream (deduper);
//   - the run is kept uncommitted to the end of the load: when no record of
//     its partition went to the buffers, the run is the partition,
//     committed as it is; otherwise (a unit with another unit's keys of the same
//     partition, or one sorted for a long prefix, then not) the run is
//     dropped and its rows are read again from the unit into the buffers,
//     where the merge resolves every duplicate.
//
// A run is a table of at most maxRunBytes of records; a longer unit
// writes several, one after another, so that no table's index and bloom
// filter grow in memory beyond that share while it is written.
const (
	pendingRecords = 1024
	pendingBytes   = 1 << 20
	maxRunBytes    = 512 << 20
)

// fastPath is one unit's run while its records are one sorted partition.
type fastPath struct {
	st       *loadState
	unit     int
	p        int // the partition, -1 before the first record
	run      *table.RunWriter
	runBytes int  // bytes appended to run
	wrote    bool // some run got records
	// after is the last key of the previous run, once a run was rotated.
	after []byte

	// Loads that resolve duplicates only.
	committed bool
	pending   *buffer // records held back before the run starts
	last      []byte  // the last key added
	d         *deduper
	rows      int64              // rows of the unit added
	finished  []*table.RunWriter // finished runs, not committed
}

// keptRun is a unit's runs in a load that resolves duplicates, finished
// but not committed until the end of the load.
type keptRun struct {
	ws         []*table.RunWriter
	unit       int
	rows       int64 // the unit's rows 1..rows are in them
	duplicates int64
}

// appendRun appends a record to the run, starting one when there is
// none, and ends the run when it has maxRunBytes: a load that resolves
// duplicates keeps it finished, uncommitted; any other commits it.
func (f *fastPath) appendRun(key, val []byte) error {
	if f.run == nil {
		w, err := f.st.builders[f.p].NewRun()
		if err != nil {
			return localErr(err)
		}
		f.run = w
	}
	if err := f.run.Append(key, val); err != nil {
		if errors.Is(err, table.ErrOrder) {
			return err
		}
		return localErr(err)
	}
	f.wrote = true
	if f.runBytes += len(key) + len(val); f.runBytes < f.st.opts.runBytes {
		return nil
	}
	f.after = append(f.after[:0], key...)
	f.runBytes = 0
	if !f.st.dedup {
		return f.st.closeRun(&f.run)
	}
	w := f.run
	f.run = nil
	f.finished = append(f.finished, w)
	if err := w.Finish(); err != nil {
		return localErr(err)
	}
	return nil
}

// add streams a record into the run, or reports false when the record
// does not continue it (another partition, a smaller key): the unit is
// then no longer on the fast path, and the record is not taken.
func (f *fastPath) add(p int, key, val []byte, ord uint64) (bool, error) {
	st := f.st
	if f.p < 0 {
		if st.builders[p] == nil {
			return false, nil
		}
		f.p = p
	} else if p != f.p {
		return false, nil
	}
	if !st.dedup {
		if f.run == nil && f.after != nil && bytes.Compare(key, f.after) < 0 {
			return false, nil
		}
		err := f.appendRun(key, val)
		if err != nil && !errors.Is(err, table.ErrOrder) {
			return false, err
		}
		return err == nil, nil
	}
	// One comparison with the last key taken serves the order check and
	// the duplicate check: the deduper's last key is the same.
	c := 1
	if f.rows > 0 {
		if c = bytes.Compare(key, f.last); c < 0 {
			return false, nil
		}
	}
	if !f.committed {
		if f.pending == nil {
			f.pending = st.newPending()
		}
		if len(f.pending.entries) < pendingRecords && f.pending.bytes < pendingBytes {
			f.take(key)
			f.pending.add(key, val, ord)
			return true, nil
		}
		if ok, err := f.commit(); !ok || err != nil {
			return false, err
		}
	}
	if c == 0 {
		f.rows++
		return true, f.d.same(key, val, ord)
	}
	f.take(key)
	return true, f.d.next(key, val, ord)
}

// take notes that the fast path took a record of key.
func (f *fastPath) take(key []byte) {
	f.last = append(f.last[:0], key...)
	f.rows++
}

// commit starts the run with the pending records, if the partition is
// not another unit's; false if it is.
func (f *fastPath) commit() (bool, error) {
	st := f.st
	if !st.claimed[f.p].CompareAndSwap(false, true) {
		return false, nil
	}
	f.committed = true
	f.d = &deduper{st: st, policy: st.layout.Duplicates, emit: func(k, v []byte, _ uint64) error {
		return f.appendRun(k, v)
	}}
	pending := f.pending
	f.pending = nil
	for i := range pending.entries {
		k, v := pending.record(i)
		if err := f.d.add(k, v, pending.ordOf(pending.entries[i])); err != nil {
			return false, err
		}
	}
	// From here add compares each key with f.last and tells the deduper
	// (same or next), which then keeps no key of its own to compare.
	f.d.compared = true
	// Every record went on as a copy (the run's block, the deduper's
	// held record): the next unit may write over them.
	st.pendingFree.Put(pending)
	return true, nil
}

// newPending is an empty buffer for a unit's pending records: one a
// unit before let go of, or new. A unit's chunk of pendingBytes was the
// most a Parquet load allocated of its own, one per file.
func (st *loadState) newPending() *buffer {
	if b, ok := st.pendingFree.Get().(*buffer); ok {
		b.reset()
		return b
	}
	return &buffer{ords: true}
}

// stop ends the fast path: whole says the unit's every record is in it.
// What was streamed stays in runs; pending records go to the buffers.
// stop reports whether the unit left a run.
func (f *fastPath) stop(whole bool) (bool, error) {
	st := f.st
	if !st.dedup {
		return f.wrote, st.closeRun(&f.run)
	}
	if !f.committed && f.pending != nil && whole {
		if _, err := f.commit(); err != nil {
			return false, err
		}
	}
	if !f.committed {
		pending := f.pending
		f.pending = nil
		if pending == nil {
			return false, nil
		}
		for i := range pending.entries {
			k, v := pending.record(i)
			if err := st.bufferRecord(f.p, k, v, pending.ordOf(pending.entries[i])); err != nil {
				return false, err
			}
		}
		st.pendingFree.Put(pending) // copied into the partition's buffer
		return false, nil
	}
	if err := f.d.flush(); err != nil {
		return false, err
	}
	if f.run != nil {
		w := f.run
		f.run = nil
		f.finished = append(f.finished, w)
		if err := w.Finish(); err != nil {
			return false, localErr(err)
		}
	}
	// When it stopped early, the record that broke the order was not
	// taken: the runs hold rows 1..rows.
	st.keptMu.Lock()
	st.kept[f.p] = &keptRun{ws: f.finished, unit: f.unit, rows: f.rows, duplicates: f.d.duplicates}
	st.keptMu.Unlock()
	f.finished = nil
	return true, nil
}

// abort drops what the fast path holds, after an error.
func (f *fastPath) abort() {
	if f.run != nil {
		f.run.Abort()
		f.run = nil
	}
	for _, w := range f.finished {
		w.Abort()
	}
	f.finished = nil
}

// bufferRecord adds a record to partition p's buffer (dropped when p is
// not held), and spills when the buffers are over budget.
func (st *loadState) bufferRecord(p int, key, val []byte, ord uint64) error {
	b := st.buffers[p]
	if b == nil {
		return nil
	}
	if st.buffered.Add(b.add(key, val, ord)) > st.opts.SpillBytes {
		return st.spill(false)
	}
	return nil
}

// settleKept closes each kept run that is its partition's only source,
// and for the others drops the run and reads its rows again into the
// buffers (see the comment at the top).
func (st *loadState) settleKept() error {
	var again []int
	for p, k := range st.kept {
		if k == nil {
			continue
		}
		if st.buffers[p].added.Load() == 0 {
			st.kept[p] = nil
			st.duplicates.Add(k.duplicates)
			for _, w := range k.ws {
				if w.Len() > 0 {
					st.runs.Add(1)
				}
				w.Commit()
			}
			continue
		}
		again = append(again, p)
	}
	return st.parallel(len(again), func(ctx context.Context, i int) error {
		p := again[i]
		k := st.kept[p]
		st.kept[p] = nil
		for _, w := range k.ws {
			w.Abort()
		}
		return st.reread(ctx, p, k.unit, k.rows)
	})
}

// reread adds rows 1..rows of unit, all of partition p, to p's buffer.
// Its bytes are not counted again in the progress.
func (st *loadState) reread(ctx context.Context, p, unit int, rows int64) error {
	in := st.in
	in.read = nil
	r, err := st.layout.Format.Open(ctx, st.layout.Units[unit], in)
	if err != nil {
		return err
	}
	defer r.Close()
	for n := int64(1); n <= rows; n++ {
		if !r.Next() {
			if err := r.Err(); err != nil {
				return fmt.Errorf("loader: %w", err)
			}
			return fmt.Errorf("loader: %s ended after %d records when read again, %d before",
				st.in.Path(st.layout.Units[unit].Files[0]), n-1, rows)
		}
		if n%recordBatch == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		if q := partitioner.Partition(r.Key(), st.n); q != p {
			return fmt.Errorf("loader: %s record %d is of partition %d when read again, %d before: %w",
				st.in.Path(st.layout.Units[unit].Files[0]), n, q, p, source.ErrChanged)
		}
		if err := st.bufferRecord(p, r.Key(), r.Value(), ordinal(unit, n)); err != nil {
			return err
		}
	}
	return nil
}

// abortKept drops the kept runs after a failed load.
func (st *loadState) abortKept() {
	for p, k := range st.kept {
		if k != nil {
			for _, w := range k.ws {
				w.Abort()
			}
			st.kept[p] = nil
		}
	}
}
