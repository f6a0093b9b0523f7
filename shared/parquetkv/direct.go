package parquetkv

import (
	"fmt"
	"strconv"
	"time"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// A direct column is a leaf read with arrow-go's typed column chunk
// reader, a page's values at a time, instead of through its arrow record
// reader: no arrow arrays are built, byte arrays are not copied out of
// the decompressed page, and each value is formatted straight from the
// page's decoded values. Only leaves whose arrow mapping is a plain
// reinterpretation or cast of the stored values are read so (directKindOf
// says which, mirroring pqarrow's transfer of each type), so a value
// prints exactly as appendValue prints the array arrow-go would have
// built; every other leaf still goes through arrow-go's record reader.
//
// A direct column is a top-level leaf, optional or required, or the
// element of a top-level three-level LIST (optional or required list,
// repeated group, optional or required element).

// directKind is the type a direct column's values print as.
type directKind uint8

const (
	dkBool directKind = iota + 1
	dkInt8
	dkInt16
	dkInt32
	dkInt64
	dkUint8
	dkUint16
	dkUint32
	dkUint64
	dkFloat32
	dkFloat64
	dkString // BYTE_ARRAY as a JSON string
	dkBinary // BYTE_ARRAY as base64
	dkDate32
	dkTimestamp // INT64 in unit
	dkInt96     // Spark's timestamps (int96.go)
)

// maxJSONValue bounds a row's JSON value: a page's levels and
// dictionary indexes are run-length encoded, so a few bytes can make a
// list of billions of elements.
const maxJSONValue = 64 << 20

// directBatch is how many levels a direct column decodes at a time: at
// most a page's. (4096 saved half a percent of a feature table's
// instructions for a megabyte more of peak RSS: not kept.)
const directBatch = 1024

// dictBatch is directBatch for a column chunk with a dictionary page:
// arrow-go's dictionary decoder puts a 4 KiB index buffer on the heap at
// every call, whatever the count asked for, which at 1024 levels a call
// was a quarter of what a feature-table load allocated (three
// dictionary columns, 12 MB a load) and so of its collections. Its
// values are references into the pages, a few bytes a level.
const dictBatch = 4096

// directKindOf returns the kind col reads as when pqarrow maps it to t;
// 0 when it must go through arrow-go's record reader.
func directKindOf(col *schema.Column, t arrow.DataType) directKind {
	phys := col.PhysicalType()
	intPhys := phys == parquet.Types.Int32 || phys == parquet.Types.Int64
	switch t.ID() {
	case arrow.BOOL:
		if phys == parquet.Types.Boolean {
			return dkBool
		}
	// INT32, INT64, FLOAT32 and FLOAT64 are zero-copy in pqarrow: only
	// the matching physical type; the narrower integers are cast from
	// either.
	case arrow.INT32:
		if phys == parquet.Types.Int32 {
			return dkInt32
		}
	case arrow.INT64:
		if phys == parquet.Types.Int64 {
			return dkInt64
		}
	case arrow.FLOAT32:
		if phys == parquet.Types.Float {
			return dkFloat32
		}
	case arrow.FLOAT64:
		if phys == parquet.Types.Double {
			return dkFloat64
		}
	case arrow.INT8:
		if intPhys {
			return dkInt8
		}
	case arrow.INT16:
		if intPhys {
			return dkInt16
		}
	case arrow.UINT8:
		if intPhys {
			return dkUint8
		}
	case arrow.UINT16:
		if intPhys {
			return dkUint16
		}
	case arrow.UINT32:
		if intPhys {
			return dkUint32
		}
	case arrow.UINT64:
		if intPhys {
			return dkUint64
		}
	case arrow.DATE32:
		if intPhys {
			return dkDate32
		}
	case arrow.STRING:
		if phys == parquet.Types.ByteArray {
			return dkString
		}
	case arrow.BINARY:
		if phys == parquet.Types.ByteArray {
			return dkBinary
		}
	case arrow.TIMESTAMP:
		switch t.(*arrow.TimestampType).Unit {
		case arrow.Millisecond, arrow.Microsecond, arrow.Nanosecond:
			if phys == parquet.Types.Int64 {
				return dkTimestamp
			}
		}
	}
	return 0
}

// newDirect returns the direct column for leaf i of sc whose top-level
// field has the arrow type t, or nil when it must go through arrow-go.
// INT96 leaves are always direct (int96.go says why).
func newDirect(sc *schema.Schema, i int, t arrow.DataType) *directColumn {
	col := sc.Column(i)
	path := col.ColumnPath()
	c := &directColumn{leaf: i, maxDef: col.MaxDefinitionLevel(), name: col.Path()}
	switch {
	case len(path) == 1 && col.MaxRepetitionLevel() == 0 && c.maxDef <= 1:
		if col.PhysicalType() == parquet.Types.Int96 {
			c.kind = dkInt96
			return c
		}
		c.kind = directKindOf(col, t)
	case len(path) == 3 && col.MaxRepetitionLevel() == 1 && t.ID() == arrow.LIST:
		leaf := col.SchemaNode()
		mid := leaf.Parent()
		top := mid.Parent()
		if mid == nil || top == nil || top.Parent() == nil || top.Parent().Parent() != nil ||
			mid.RepetitionType() != parquet.Repetitions.Repeated ||
			top.RepetitionType() == parquet.Repetitions.Repeated || leaf.RepetitionType() == parquet.Repetitions.Repeated {
			return nil
		}
		if col.PhysicalType() == parquet.Types.Int96 {
			return nil
		}
		c.list = true
		if top.RepetitionType() == parquet.Repetitions.Optional {
			c.topDef = 1
		}
		c.midDef = c.topDef + 1
		if c.maxDef != c.midDef && c.maxDef != c.midDef+1 {
			return nil
		}
		c.kind = directKindOf(col, t.(*arrow.ListType).Elem())
		if t.(*arrow.ListType).Elem().ID() == arrow.TIMESTAMP {
			c.unit = t.(*arrow.ListType).Elem().(*arrow.TimestampType).Unit
		}
	}
	if c.kind == 0 {
		return nil
	}
	if !c.list && t.ID() == arrow.TIMESTAMP {
		c.unit = t.(*arrow.TimestampType).Unit
	}
	if c.kind == dkTimestamp {
		c.dates = new(dateCache)
	}
	return c
}

// directColumn reads one leaf, in step with the rows of its row group.
type directColumn struct {
	leaf   int
	name   string
	kind   directKind
	unit   arrow.TimeUnit
	maxDef int16
	list   bool
	topDef int16 // a list: levels below it are a null list
	midDef int16 // a list: levels below it (and at least topDef) are an empty list

	cr file.ColumnChunkReader

	// The levels and values decoded from the current page; byte arrays
	// alias the page and are valid until the next fill.
	defs, reps []int16
	n, pos     int // levels decoded, next level
	nv, vpos   int // values decoded, next value
	b          []bool
	i32        []int32
	i64        []int64
	f32        []float32
	f64        []float64
	ba         []parquet.ByteArray
	i96        []parquet.Int96
	maxLen     int // the longest of ba's values decoded
	// dict, for a dictionary-encoded string column, caches the JSON of
	// its short values (rows.go).
	dict *strCache
	// dates, for a timestamp column, caches the digits of its dates
	// (json.go).
	dates *dateCache

	cur   int  // the current row's value index, -1 for null (flat columns)
	is64  bool // integers are INT64
	batch int  // levels decoded at a time: directBatch, or dictBatch
}

func (c *directColumn) open(rg *file.RowGroupReader) error {
	cr, err := rg.Column(c.leaf)
	if err != nil {
		return err
	}
	c.cr = cr
	_, c.is64 = cr.(*file.Int64ColumnChunkReader)
	c.n, c.pos, c.nv, c.vpos = 0, 0, 0, 0
	c.dict = nil
	c.batch = directBatch
	if cc, err := rg.MetaData().ColumnChunk(c.leaf); err == nil && cc.HasDictionaryPage() {
		c.batch = dictBatch
		if c.kind == dkString {
			c.dict = &strCache{}
		}
	}
	return nil
}

// fill decodes the next levels and values, at most a page's.
func (c *directColumn) fill() error {
	if c.cr == nil {
		return fmt.Errorf("column %s read past its row group", c.name)
	}
	n := c.batch
	var defs, reps []int16
	if c.maxDef > 0 {
		c.defs = growTo(c.defs, n)
		defs = c.defs
	}
	if c.list {
		c.reps = growTo(c.reps, n)
		reps = c.reps
	}
	var (
		total int64
		nv    int
		err   error
	)
	switch r := c.cr.(type) {
	case *file.BooleanColumnChunkReader:
		c.b = growTo(c.b, n)
		total, nv, err = r.ReadBatchInPage(int64(n), c.b, defs, reps)
	case *file.Int32ColumnChunkReader:
		c.i32 = growTo(c.i32, n)
		total, nv, err = r.ReadBatchInPage(int64(n), c.i32, defs, reps)
	case *file.Int64ColumnChunkReader:
		c.i64 = growTo(c.i64, n)
		total, nv, err = r.ReadBatchInPage(int64(n), c.i64, defs, reps)
	case *file.Float32ColumnChunkReader:
		c.f32 = growTo(c.f32, n)
		total, nv, err = r.ReadBatchInPage(int64(n), c.f32, defs, reps)
	case *file.Float64ColumnChunkReader:
		c.f64 = growTo(c.f64, n)
		total, nv, err = r.ReadBatchInPage(int64(n), c.f64, defs, reps)
	case *file.ByteArrayColumnChunkReader:
		c.ba = growTo(c.ba, n)
		total, nv, err = r.ReadBatchInPage(int64(n), c.ba, defs, reps)
	case *file.Int96ColumnChunkReader:
		c.i96 = growTo(c.i96, n)
		total, nv, err = r.ReadBatchInPage(int64(n), c.i96, defs, reps)
	default:
		return fmt.Errorf("column %s: unexpected reader %T", c.name, c.cr)
	}
	if err != nil {
		return fmt.Errorf("column %s: %w", c.name, err)
	}
	if total <= 0 || total > int64(n) || nv < 0 || int64(nv) > total {
		if total == 0 {
			if err := c.cr.Err(); err != nil {
				return fmt.Errorf("column %s: %w", c.name, err)
			}
			return fmt.Errorf("column %s ends before its row group", c.name)
		}
		return fmt.Errorf("column %s: %d levels and %d values decoded", c.name, total, nv)
	}
	present := int(total)
	if c.maxDef > 0 {
		present = 0
		for _, d := range c.defs[:total] {
			if d == c.maxDef {
				present++
			} else if d > c.maxDef || d < 0 {
				return fmt.Errorf("column %s: definition level %d above %d", c.name, d, c.maxDef)
			}
		}
	}
	if present != nv {
		return fmt.Errorf("column %s: %d values for %d present levels", c.name, nv, present)
	}
	c.n, c.pos, c.nv, c.vpos = int(total), 0, nv, 0
	if c.dict != nil {
		c.dict.reset()
	}
	if c.ba != nil {
		c.maxLen = 0
		for _, v := range c.ba[:nv] {
			c.maxLen = max(c.maxLen, len(v))
		}
	}
	return nil
}

// refill decodes the next levels and values, then steps to the next
// row; a flat column steps, or refills at its page's end, once a row
// (Reader.Next, where step is inlined).
func (c *directColumn) refill() error {
	if err := c.fill(); err != nil {
		return err
	}
	c.step()
	return nil
}

// step moves to the next row of the decoded levels.
func (c *directColumn) step() {
	p := c.pos
	c.pos++
	if c.maxDef > 0 && c.defs[p] < c.maxDef {
		c.cur = -1
		return
	}
	c.cur = c.vpos
	c.vpos++
}

// finish checks the column ended with its row group.
func (c *directColumn) finish() error {
	if c.cr == nil {
		return nil
	}
	cr := c.cr
	defer c.close()
	if c.pos != c.n || cr.HasNext() {
		return fmt.Errorf("column %s holds more rows than its row group", c.name)
	}
	return cr.Err()
}

// close gives the page buffers of the column's chunk back to the
// reader's allocator.
func (c *directColumn) close() {
	if c.cr != nil {
		c.cr.Close()
		c.cr = nil
	}
	c.n, c.pos, c.nv, c.vpos = 0, 0, 0, 0
}

// appendJSON appends the current row's value of a flat column, or reads
// and appends the next row of a list column, failing once dst passes
// limit bytes.
func (c *directColumn) appendJSON(dst []byte, limit int) ([]byte, error) {
	if !c.list {
		if c.cur < 0 {
			return append(dst, "null"...), nil
		}
		return c.appendItem(dst, c.cur), nil
	}
	if c.pos == c.n {
		if err := c.fill(); err != nil {
			return dst, err
		}
	}
	if c.reps[c.pos] != 0 {
		return dst, fmt.Errorf("column %s: a row starts at repetition level %d", c.name, c.reps[c.pos])
	}
	d := c.defs[c.pos]
	switch {
	case d < c.topDef:
		c.pos++
		return append(dst, "null"...), nil
	case d < c.midDef:
		c.pos++
		return append(dst, "[]"...), nil
	}
	dst = append(dst, '[')
	for first := true; ; first = false {
		// c.pos < c.n and the level is an element of this row.
		if !first {
			dst = append(dst, ',')
		}
		if c.defs[c.pos] < c.midDef {
			return dst, fmt.Errorf("column %s: an element at definition level %d", c.name, c.defs[c.pos])
		}
		if c.defs[c.pos] == c.maxDef {
			dst = c.appendItem(dst, c.vpos)
			c.vpos++
		} else {
			dst = append(dst, "null"...)
		}
		if len(dst) > limit {
			// A run of levels a few bytes long can repeat one
			// dictionary value two billion times.
			return dst, fmt.Errorf("column %s: the row's JSON value passes %d bytes", c.name, limit)
		}
		c.pos++
		if c.pos == c.n {
			// The row may go on in the next page; its earlier elements
			// are already formatted.
			if c.cr == nil || !c.cr.HasNext() {
				break
			}
			if err := c.fill(); err != nil {
				return dst, err
			}
		}
		if c.reps[c.pos] == 0 {
			break
		}
	}
	return append(dst, ']'), nil
}

// appendItem appends value k as JSON, as appendValue prints it.
func (c *directColumn) appendItem(dst []byte, k int) []byte {
	switch c.kind {
	case dkBool:
		return strconv.AppendBool(dst, c.b[k])
	case dkInt8:
		return appendInt(dst, int64(int8(c.int(k))))
	case dkInt16:
		return appendInt(dst, int64(int16(c.int(k))))
	case dkInt32:
		return appendInt(dst, int64(c.i32[k]))
	case dkInt64:
		return appendInt(dst, c.i64[k])
	case dkUint8:
		return appendUint(dst, uint64(uint8(c.int(k))))
	case dkUint16:
		return appendUint(dst, uint64(uint16(c.int(k))))
	case dkUint32:
		return appendUint(dst, uint64(uint32(c.int(k))))
	case dkUint64:
		return appendUint(dst, uint64(c.int(k)))
	case dkFloat32:
		return appendFloat(dst, float64(c.f32[k]), 32)
	case dkFloat64:
		return appendFloat(dst, c.f64[k], 64)
	case dkString:
		return appendJSONString(dst, c.ba[k])
	case dkBinary:
		return appendBase64(dst, c.ba[k])
	case dkDate32:
		return appendTime(dst, time.Unix(int64(int32(c.int(k)))*86400, 0), time.DateOnly)
	case dkTimestamp:
		return appendTimestampIn(dst, c.i64[k], c.unit, c.dates)
	case dkInt96:
		return appendTime(dst, int96Time(c.i96[k]), time.RFC3339Nano)
	}
	return append(dst, "null"...)
}

// int returns integer value k, sign-extended from INT32 or as INT64.
func (c *directColumn) int(k int) int64 {
	if c.is64 {
		return c.i64[k]
	}
	return int64(c.i32[k])
}

// key returns the current row's key: the bytes of a string or binary
// column, the decimal text of an integer one formatted into buf.
func (c *directColumn) key(buf *[]byte) ([]byte, error) {
	if c.cur < 0 {
		return nil, fmt.Errorf("null key")
	}
	return c.keyAt(c.cur, buf)
}

// keyAt returns the key of value k, as key does.
func (c *directColumn) keyAt(k int, buf *[]byte) ([]byte, error) {
	switch c.kind {
	case dkString, dkBinary:
		return c.ba[k], nil
	case dkInt8, dkInt16, dkInt32, dkInt64, dkUint8, dkUint16, dkUint32, dkUint64:
		*buf = c.appendItem((*buf)[:0], k)
		return *buf, nil
	}
	return nil, fmt.Errorf("key of kind %d", c.kind)
}

// bytes returns the current row's value of a string or binary column.
func (c *directColumn) bytes() ([]byte, bool) {
	if c.cur < 0 {
		return nil, false
	}
	return c.ba[c.cur], true
}

// keyKind reports whether a direct column of kind k can be a key.
func keyKind(k directKind) bool {
	switch k {
	case dkString, dkBinary, dkInt8, dkInt16, dkInt32, dkInt64, dkUint8, dkUint16, dkUint32, dkUint64:
		return true
	}
	return false
}

func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
