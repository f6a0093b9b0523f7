package parquetkv

import (
	"fmt"
	"strconv"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// batchCols are the arrays of one batch decoded by arrow-go's record
// reader that a record is made of.
type batchCols struct {
	keyPath []arrow.Array // the key's struct ancestors, then the key; nil when read directly
	value   arrow.Array   // nil for JSON values and a value read directly
	fields  []arrow.Array // by JSON field; nil for a field read directly
}

// bind finds the plan's columns in a batch.
func (p *plan) bind(b arrow.RecordBatch) (batchCols, error) {
	var c batchCols
	if p.keyPath != nil && p.keyDirect == nil {
		var err error
		if c.keyPath, err = arraysAt(b, p.keyPath); err != nil {
			return c, fmt.Errorf("key column: %w", err)
		}
	}
	if p.valPath != nil {
		if p.valDirect != nil {
			return c, nil
		}
		path, err := arraysAt(b, p.valPath)
		if err != nil {
			return c, fmt.Errorf("value column: %w", err)
		}
		for _, a := range path[:len(path)-1] {
			if a.NullN() > 0 {
				return c, fmt.Errorf("value column: a struct holding it is null")
			}
		}
		c.value = path[len(path)-1]
		return c, nil
	}
	c.fields = make([]arrow.Array, len(p.fields))
	for k, f := range p.fields {
		if f.direct != nil {
			continue
		}
		idx := b.Schema().FieldIndices(f.name)
		if len(idx) != 1 {
			return c, fmt.Errorf("column %s not in the decoded batch", f.name)
		}
		c.fields[k] = b.Column(idx[0])
	}
	return c, nil
}

// arraysAt returns the arrays along a dotted path in a batch.
func arraysAt(b arrow.RecordBatch, path []string) ([]arrow.Array, error) {
	idx := b.Schema().FieldIndices(path[0])
	if len(idx) != 1 {
		return nil, fmt.Errorf("%q not in the decoded batch", path[0])
	}
	out := []arrow.Array{b.Column(idx[0])}
	for _, name := range path[1:] {
		st, ok := out[len(out)-1].(*array.Struct)
		if !ok {
			return nil, fmt.Errorf("%q: parent is not a struct", name)
		}
		i, ok := st.DataType().(*arrow.StructType).FieldIdx(name)
		if !ok {
			return nil, fmt.Errorf("no field %q", name)
		}
		out = append(out, st.Field(i))
	}
	return out, nil
}

// key returns row i's key: the bytes of a string or binary column, the
// decimal text of an integer one formatted into buf.
func (c *batchCols) key(i int, buf *[]byte) ([]byte, error) {
	for _, a := range c.keyPath {
		if a.IsNull(i) {
			return nil, fmt.Errorf("null key")
		}
	}
	switch a := c.keyPath[len(c.keyPath)-1].(type) {
	case *array.Int8:
		*buf = strconv.AppendInt((*buf)[:0], int64(a.Value(i)), 10)
		return *buf, nil
	case *array.Int16:
		*buf = strconv.AppendInt((*buf)[:0], int64(a.Value(i)), 10)
		return *buf, nil
	case *array.Int32:
		*buf = strconv.AppendInt((*buf)[:0], int64(a.Value(i)), 10)
		return *buf, nil
	case *array.Int64:
		*buf = strconv.AppendInt((*buf)[:0], a.Value(i), 10)
		return *buf, nil
	case *array.Uint8:
		*buf = strconv.AppendUint((*buf)[:0], uint64(a.Value(i)), 10)
		return *buf, nil
	case *array.Uint16:
		*buf = strconv.AppendUint((*buf)[:0], uint64(a.Value(i)), 10)
		return *buf, nil
	case *array.Uint32:
		*buf = strconv.AppendUint((*buf)[:0], uint64(a.Value(i)), 10)
		return *buf, nil
	case *array.Uint64:
		*buf = strconv.AppendUint((*buf)[:0], a.Value(i), 10)
		return *buf, nil
	default:
		if binaryType(a.DataType()) {
			return binaryValue(a, i), nil
		}
		return nil, fmt.Errorf("key of type %s", a.DataType())
	}
}

// appendJSON appends the current row (row i of the decoded batch) as
// one JSON object.
func (r *Reader) appendJSON(dst []byte, i int) ([]byte, error) {
	if len(r.plan.fields) == 0 {
		return append(dst, '{', '}'), nil
	}
	for k := range r.plan.fields {
		f := &r.plan.fields[k]
		dst = append(dst, f.quoted...)
		switch d := f.direct; {
		case d == nil:
			dst = appendValue(dst, r.cols.fields[k], i)
		case !d.list:
			// appendJSON's first case, without the call: most of a
			// row's fields.
			if d.cur < 0 {
				dst = append(dst, "null"...)
			} else {
				dst = d.appendItem(dst, d.cur)
			}
		default:
			var err error
			if dst, err = d.appendJSON(dst, r.opts.maxJSON); err != nil {
				return dst, err
			}
		}
		if len(dst) > r.opts.maxJSON {
			return dst, fmt.Errorf("the row's JSON value passes %d bytes", r.opts.maxJSON)
		}
	}
	return append(dst, '}'), nil
}

func unsafeBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
