package parquetkv

import (
	"fmt"
	"unsafe"
)

// When every JSON field and the key are direct columns (direct.go), rows
// are formatted a batch at a time, column by column: each column appends
// its prefix and value to every row of the batch in one loop of its own
// kind, with no dispatch on the field or the kind per value and no step
// of every column per row. Next then gives the batch's rows one by one.
//
// A batch never crosses the end of a column's decoded levels, so no
// column refills while a batch is formatted and its byte arrays (the
// keys) stay valid until the batch is given: flat columns bound it by
// the levels they hold, lists by the rows that end within theirs. The
// last row a list's levels start may go on in its next page; when a
// batch would hold no row, that row is formatted alone as without
// batches (Reader.Next's per-row path), which refills as it goes.
//
// A batch's bytes are bounded before it is formatted: each column says
// the most a row can take from it (a string column's longest decoded
// value, six bytes a byte escaped), a list the most its levels can
// print, and the batch's rows are cut to fit batchBudget and the row
// bound, so no row of a batch can pass maxJSON: a row that might goes
// alone through the per-row path, which checks as it formats.

// shortTries is how many values in a row a double column's batch
// tries as short decimals before it prints the rest of the batch
// without trying (flatRows).
const shortTries = 16

// batchRows is the most rows a batch holds.
const batchRows = 1024

// batchBudget bounds the bytes of one batch's rows.
const batchBudget = 4 << 20

// rowArena is the capacity each row's buffer starts with: a row of a
// feature table fits.
const rowArena = 512

// rowKeep is the capacity above which a row's buffer is dropped after
// its batch rather than kept for the next.
const rowKeep = 64 << 10

// rowBatch is the JSON values of up to batchRows rows, and where Next is
// in them.
type rowBatch struct {
	rows [][]byte // the rows' values
	keys []int32  // the key column's value index per row, -1 for null
	vi   []int32  // a flat column's value index per row, -1 for null
	i, n int      // the next row to give; the rows formatted
	// err stops the batch at row n, once the rows before it are given.
	err error
}

// reset drops what a batch holds, at the start of a row group.
func (b *rowBatch) reset() {
	b.i, b.n, b.err = 0, 0, nil
	b.keys = b.keys[:0]
}

// batchable says whether p's rows can be formatted in batches: JSON
// values of direct columns only, keyed by a direct column or the row.
func (p *plan) batchable() bool {
	if p.valPath != nil || len(p.leaves) > 0 || len(p.fields) == 0 {
		return false
	}
	if p.keyPath != nil && p.keyDirect == nil {
		return false
	}
	for k := range p.fields {
		if p.fields[k].direct == nil {
			return false
		}
	}
	return true
}

// formatBatch formats the next rows of the open group (r.left > 0)
// into r.bat. It sets r.bat.n to 0, and no error, when the next row is
// to be formatted alone.
func (r *Reader) formatBatch() {
	b := &r.bat
	p := &r.plan
	b.i, b.n, b.err = 0, 0, nil
	b.keys = b.keys[:0]
	for _, d := range p.direct {
		if d.pos == d.n {
			if err := d.fill(); err != nil {
				b.err = err
				return
			}
		}
	}
	n := int(min(int64(batchRows), r.left))
	for _, d := range p.flat {
		n = min(n, d.n-d.pos)
	}
	perRow, lists := 1, 0 // a row's '}'
	for k := range p.fields {
		f := &p.fields[k]
		d := f.direct
		perRow += len(f.quoted)
		if !d.list {
			perRow += d.valueBound()
			continue
		}
		var levels int
		n, levels = d.completeRows(n)
		lists += levels * (max(d.valueBound(), 4) + 3)
	}
	budget := min(batchBudget, r.opts.maxJSON)
	if lists >= budget {
		return
	}
	n = min(n, (budget-lists)/perRow)
	if n <= 0 {
		return
	}
	if kd := p.keyDirect; kd != nil {
		b.keys, _ = kd.indexes(b.keys, n)
	}
	rows := b.grow(n)
	for k := range p.fields {
		f := &p.fields[k]
		d := f.direct
		if d.list {
			done, err := d.listRows(rows, f)
			if err != nil {
				// The rows before it are given; the error, at its row.
				rows, b.err = rows[:done], err
			}
			continue
		}
		b.vi, _ = d.indexes(b.vi, len(rows))
		d.flatRows(rows, f, b.vi)
	}
	for i := range rows {
		rows[i] = append(rows[i], '}')
	}
	b.n = len(rows)
	if b.err != nil {
		return // the columns are not read again
	}
	for _, d := range p.flat {
		d.advance(n)
	}
}

// grow returns the batch's first n row buffers, emptied.
func (b *rowBatch) grow(n int) [][]byte {
	if len(b.rows) < n {
		arena := make([]byte, (n-len(b.rows))*rowArena)
		for len(b.rows) < n {
			b.rows = append(b.rows, arena[:0:rowArena])
			arena = arena[rowArena:]
		}
	}
	rows := b.rows[:n]
	for i := range rows {
		if cap(rows[i]) > rowKeep {
			rows[i] = make([]byte, 0, rowArena)
		}
		rows[i] = rows[i][:0]
	}
	return rows
}

// valueBound is the most bytes one of c's values prints as, among the
// values decoded.
func (c *directColumn) valueBound() int {
	switch c.kind {
	case dkString:
		// wire.AppendJSONString writes at most \uXXXX for a byte.
		return 6*c.maxLen + 2
	case dkBinary:
		return (c.maxLen+2)/3*4 + 2
	}
	// Numbers are at most 24 bytes, a date or timestamp in quotes at most
	// 40 (RFC 3339 with a year of twelve digits and nanoseconds).
	return 64
}

// completeRows returns the most rows, up to limit, that start and end
// within the list's decoded levels from pos, and how many levels they
// span. The last row to start there is not counted: it may go on in the
// next page.
func (c *directColumn) completeRows(limit int) (rows, levels int) {
	reps := c.reps[:c.n]
	for p := c.pos + 1; p < len(reps) && rows < limit; p++ {
		if reps[p] == 0 {
			rows++
			levels = p - c.pos
		}
	}
	return rows, levels
}

// indexes returns, in vi, the value index of each of the next n rows of a
// flat column (-1 for a null), all of them decoded, without stepping.
func (c *directColumn) indexes(vi []int32, n int) ([]int32, int) {
	vi = growTo(vi, n)
	vp := c.vpos
	if c.maxDef == 0 {
		for i := range vi {
			vi[i] = int32(vp + i)
		}
		return vi, vp + n
	}
	defs := c.defs[c.pos : c.pos+n]
	vi = vi[:len(defs)]
	for i, d := range defs {
		if d == c.maxDef {
			vi[i] = int32(vp)
			vp++
		} else {
			vi[i] = -1
		}
	}
	return vi, vp
}

// advance steps a flat column over its next n rows, all decoded.
func (c *directColumn) advance(n int) {
	if c.maxDef == 0 {
		c.pos += n
		c.vpos += n
		return
	}
	vp := c.vpos
	for _, d := range c.defs[c.pos : c.pos+n] {
		if d == c.maxDef {
			vp++
		}
	}
	c.pos += n
	c.vpos = vp
}

// flatRows appends pfx and a flat column's value to each row, rows[i]
// taking value vi[i] (len(vi) = len(rows)). The common kinds have loops
// of their own; others print through appendItem.
func (c *directColumn) flatRows(rows [][]byte, f *field, vi []int32) {
	rows = rows[:len(vi)]
	pfx, q, qn := f.quoted, &f.quoted16, len(f.quoted)
	switch c.kind {
	case dkInt32:
		vals := c.i32
		for i, k := range vi {
			b := putPrefix(rows[i], q, qn, pfx)
			if k < 0 {
				b = append(b, "null"...)
			} else {
				b = appendInt(b, int64(vals[k]))
			}
			rows[i] = b
		}
	case dkInt64:
		vals := c.i64
		for i, k := range vi {
			b := putPrefix(rows[i], q, qn, pfx)
			if k < 0 {
				b = append(b, "null"...)
			} else {
				b = appendInt(b, vals[k])
			}
			rows[i] = b
		}
	case dkFloat32:
		vals := c.f32
		for i, k := range vi {
			b := putPrefix(rows[i], q, qn, pfx)
			if k < 0 {
				b = append(b, "null"...)
			} else {
				b = appendFloat(b, float64(vals[k]), 32)
			}
			rows[i] = b
		}
	case dkFloat64:
		// A column whose first values of the batch are not short
		// decimals (appendShortDecimal) is mostly not: a score or a
		// ratio rather than a price. Its values skip that attempt, which
		// costs a float division each; both ways print strconv's bytes.
		vals := c.f64
		tries := shortTries
		for i, k := range vi {
			b := putPrefix(rows[i], q, qn, pfx)
			switch {
			case k < 0:
				b = append(b, "null"...)
			case tries > 0:
				var ok bool
				if b, ok = appendShortDecimal(b, vals[k]); ok {
					tries = shortTries
					break
				}
				tries--
				b = appendFloatLong(b, vals[k])
			default:
				b = appendFloatLong(b, vals[k])
			}
			rows[i] = b
		}
	case dkString:
		vals := c.ba
		if sc := c.dict; sc != nil {
			for i, k := range vi {
				b := putPrefix(rows[i], q, qn, pfx)
				if k < 0 {
					b = append(b, "null"...)
					rows[i] = b
					continue
				}
				// sc.append's hit, without the call.
				v := vals[k]
				p := uintptr(unsafe.Pointer(unsafe.SliceData(v)))
				e := &sc.ent[(p^p>>6)&63]
				if l := len(b); e.p == p && e.n == len(v) && cap(b)-l >= 16 {
					*(*[16]byte)(b[l : l+16]) = e.enc
					b = b[:l+e.m]
				} else {
					b = sc.append(b, v)
				}
				rows[i] = b
			}
			return
		}
		for i, k := range vi {
			b := putPrefix(rows[i], q, qn, pfx)
			if k < 0 {
				b = append(b, "null"...)
			} else {
				b = appendJSONString(b, vals[k])
			}
			rows[i] = b
		}
	case dkTimestamp:
		vals, unit, dc := c.i64, c.unit, c.dates
		for i, k := range vi {
			b := putPrefix(rows[i], q, qn, pfx)
			if k < 0 {
				b = append(b, "null"...)
			} else {
				b = appendTimestampIn(b, vals[k], unit, dc)
			}
			rows[i] = b
		}
	default:
		for i, k := range vi {
			b := putPrefix(rows[i], q, qn, pfx)
			if k < 0 {
				b = append(b, "null"...)
			} else {
				b = c.appendItem(b, int(k))
			}
			rows[i] = b
		}
	}
}

// listRows appends pfx and a list column's next row to each row; every
// row ends within the decoded levels (completeRows). On an error it
// returns the rows done before the one it is about.
func (c *directColumn) listRows(rows [][]byte, f *field) (int, error) {
	pos, vp := c.pos, c.vpos
	pfx, q, qn := f.quoted, &f.quoted16, len(f.quoted)
	defs, reps := c.defs[:c.n], c.reps[:c.n]
	for i := range rows {
		b := putPrefix(rows[i], q, qn, pfx)
		if reps[pos] != 0 {
			return i, fmt.Errorf("column %s: a row starts at repetition level %d", c.name, reps[pos])
		}
		switch d := defs[pos]; {
		case d < c.topDef:
			b = append(b, "null"...)
			pos++
		case d < c.midDef:
			b = append(b, "[]"...)
			pos++
		default:
			b = append(b, '[')
			for first := true; ; first = false {
				if !first {
					b = append(b, ',')
				}
				switch d := defs[pos]; {
				case d < c.midDef:
					return i, fmt.Errorf("column %s: an element at definition level %d", c.name, d)
				case d == c.maxDef:
					if c.dict != nil {
						b = c.dict.append(b, c.ba[vp])
					} else if c.kind == dkString {
						b = appendJSONString(b, c.ba[vp])
					} else {
						b = c.appendItem(b, vp)
					}
					vp++
				default:
					b = append(b, "null"...)
				}
				pos++
				// completeRows saw the next row start before the end.
				if pos == len(reps) || reps[pos] == 0 {
					break
				}
			}
			b = append(b, ']')
		}
		rows[i] = b
	}
	c.pos, c.vpos = pos, vp
	return len(rows), nil
}

// putPrefix appends a field's prefix pfx, of n bytes, which q holds
// padded to 16 when n <= 16: with one 16-byte store, not a call to
// memmove, when the row has room for it.
func putPrefix(b []byte, q *[16]byte, n int, pfx []byte) []byte {
	l := len(b)
	if n <= 16 && cap(b)-l >= 16 {
		*(*[16]byte)(b[l : l+16]) = *q
		return b[:l+n]
	}
	return append(b, pfx...)
}

// strCache holds the JSON of a dictionary-encoded string column's short
// values, by the address and length of their bytes: a dictionary's
// values are the same few slices of its page over and over, so most
// values are one lookup and one 16-byte store instead of a scan of their
// bytes and three appends. It is emptied at every fill, before which
// every cached address still holds the bytes it was cached for (the
// decoded values alias buffers that live until the column's next page).
type strCache struct {
	ent [64]strEntry
}

type strEntry struct {
	p   uintptr // the value's first byte; 0 for none
	n   int     // the value's length
	m   int     // the JSON's length, at most 16
	enc [16]byte
}

// reset forgets every value.
func (sc *strCache) reset() {
	for i := range sc.ent {
		sc.ent[i].p = 0
	}
}

// append appends s as appendJSONString does.
func (sc *strCache) append(dst, s []byte) []byte {
	if len(s) == 0 || len(s) > 14 {
		return appendJSONString(dst, s)
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	e := &sc.ent[(p^p>>6)&63]
	l := len(dst)
	if e.p == p && e.n == len(s) && cap(dst)-l >= 16 {
		*(*[16]byte)(dst[l : l+16]) = e.enc
		return dst[:l+e.m]
	}
	dst = appendJSONString(dst, s)
	if m := len(dst) - l; m <= 16 {
		e.p, e.n, e.m = p, len(s), m
		copy(e.enc[:], dst[l:])
	}
	return dst
}
