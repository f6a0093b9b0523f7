package parquetkv

import (
	"fmt"
	"strconv"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"spangle/shared/wire"
)

// batchCols are the arrays of one decoded batch that a record is made of.
type batchCols struct {
	keyPath []arrow.Array // the key's struct ancestors, then the key
	value   arrow.Array   // nil for JSON values
	fields  []jsonField
}

type jsonField struct {
	name  []byte // the JSON-quoted name and a colon
	arr   arrow.Array
	int96 *int96Column
}

// bind finds the plan's columns in a batch of n rows, and reads the same
// rows of the INT96 columns.
func (p *plan) bind(b arrow.RecordBatch, group, n int) (batchCols, error) {
	var c batchCols
	if p.keyPath != nil {
		var err error
		if c.keyPath, err = arraysAt(b, p.keyPath); err != nil {
			return c, fmt.Errorf("key column: %w", err)
		}
	}
	if p.valPath != nil {
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
	for _, f := range p.fields {
		jf := jsonField{name: append(wire.AppendJSONString(nil, f.name), ':'), int96: f.int96}
		if f.int96 != nil {
			if err := f.int96.read(n); err != nil {
				return c, fmt.Errorf("column %s: %w", f.name, err)
			}
		} else {
			idx := b.Schema().FieldIndices(f.name)
			if len(idx) != 1 {
				return c, fmt.Errorf("column %s not in the decoded batch", f.name)
			}
			jf.arr = b.Column(idx[0])
		}
		c.fields = append(c.fields, jf)
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

// key appends row i's key to dst: the bytes of a string or binary
// column, the decimal text of an integer one.
func (c *batchCols) key(i int, dst []byte) ([]byte, error) {
	for _, a := range c.keyPath {
		if a.IsNull(i) {
			return nil, fmt.Errorf("null key")
		}
	}
	switch a := c.keyPath[len(c.keyPath)-1].(type) {
	case *array.Int8:
		return strconv.AppendInt(dst, int64(a.Value(i)), 10), nil
	case *array.Int16:
		return strconv.AppendInt(dst, int64(a.Value(i)), 10), nil
	case *array.Int32:
		return strconv.AppendInt(dst, int64(a.Value(i)), 10), nil
	case *array.Int64:
		return strconv.AppendInt(dst, a.Value(i), 10), nil
	case *array.Uint8:
		return strconv.AppendUint(dst, uint64(a.Value(i)), 10), nil
	case *array.Uint16:
		return strconv.AppendUint(dst, uint64(a.Value(i)), 10), nil
	case *array.Uint32:
		return strconv.AppendUint(dst, uint64(a.Value(i)), 10), nil
	case *array.Uint64:
		return strconv.AppendUint(dst, a.Value(i), 10), nil
	default:
		if binaryType(a.DataType()) {
			return binaryValue(a, i), nil
		}
		return nil, fmt.Errorf("key of type %s", a.DataType())
	}
}

// appendJSON appends row i as one JSON object.
func (c *batchCols) appendJSON(dst []byte, i int) []byte {
	dst = append(dst, '{')
	for k, f := range c.fields {
		if k > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, f.name...)
		if f.int96 != nil {
			dst = f.int96.appendJSON(dst, i)
		} else {
			dst = appendValue(dst, f.arr, i)
		}
	}
	return append(dst, '}')
}

func unsafeBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
