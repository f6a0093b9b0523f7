package parquetkv

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"spangle/shared/wire"
)

// Options tunes a Reader. Zero values select the defaults noted.
type Options struct {
	// BatchRows is how many rows are decoded at once; default 1024.
	BatchRows int
	// Alloc allocates arrow-go's buffers; default a pool of the
	// buffers of released batches and of closed Readers (poolAlloc).
	Alloc memory.Allocator

	// maxPage lowers maxPageSize, what a page may claim: fuzzing reads
	// many headers that claim the most, which arrow-go allocates.
	maxPage int64

	// maxJSON lowers maxJSONValue, for tests.
	maxJSON int

	// noDirect reads every leaf but INT96 through arrow-go's record
	// reader: how tests check that direct columns print the same.
	noDirect bool

	// noBatch formats every row alone, not in batches (rows.go): how
	// tests check that batches print the same.
	noBatch bool
}

// Reader streams the key/value records of one Parquet file. Not safe for
// concurrent use; Close releases its buffers.
type Reader struct {
	name   string
	size   int64
	ra     *trackedReaderAt
	opts   Options
	format Format
	pf     *file.Reader
	fr     *pqarrow.FileReader
	plan   plan
	scan   *pageScanner

	rg       int   // next row group
	inGroup  bool  // a group is open (rg-1)
	left     int64 // rows of the open group not yet given
	groupRow int64 // the next row's number in its group
	rr       pqarrow.RecordReader
	batch    arrow.RecordBatch
	cols     batchCols
	row      int // the next row's index in batch
	rows     int // batch's rows
	bat      rowBatch

	key, val       []byte
	keyBuf, valBuf []byte // what key and val are formatted into
	n              int64  // records given
	err            error
}

// NewReader opens the Parquet file r of size bytes, named name in errors,
// and checks that its schema can give what f asks: the key column exists
// and can be a key, the value column exists and is binary or string, and
// the JSON columns exist. It reads only the footer.
func NewReader(r io.ReaderAt, size int64, name string, f Format, opts Options) (rd *Reader, err error) {
	registerCodecs()
	if opts.BatchRows <= 0 {
		opts.BatchRows = 1024
	}
	if opts.Alloc == nil {
		opts.Alloc = &poolAlloc{}
	}
	if opts.maxJSON <= 0 || opts.maxJSON > maxJSONValue {
		opts.maxJSON = maxJSONValue
	}
	rd = &Reader{name: name, size: size, ra: &trackedReaderAt{r: r}, opts: opts, format: f}
	defer func() {
		// arrow-go checks most of what it reads, but a reader of
		// untrusted bytes must not take the process down with it.
		if p := recover(); p != nil {
			rd, err = nil, rd.fail(fmt.Errorf("%v", p), "unreadable footer")
		}
	}()
	if size < 12 {
		return nil, rd.fail(nil, "%d bytes: too short for a Parquet file (magic, footer length, magic)", size)
	}
	props := parquet.NewReaderProperties(opts.Alloc)
	props.BufferedStreamEnabled = true
	props.BufferSize = 16 << 10
	rd.scan = newPageScanner(rd.ra, opts.maxPage)
	props.MaxCompressedPageSize = rd.scan.max
	props.MaxUncompressedPageSize = rd.scan.max
	pf, err := file.NewParquetReader(io.NewSectionReader(rd.ra, 0, size), file.WithReadProps(props))
	if err != nil {
		return nil, rd.fail(err, "footer")
	}
	rd.pf = pf
	if err := rd.checkMetadata(); err != nil {
		return nil, err
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: int64(opts.BatchRows)}, opts.Alloc)
	if err != nil {
		return nil, rd.fail(err, "schema")
	}
	rd.fr = fr
	if rd.plan, err = newPlan(pf, fr, f, !opts.noDirect); err != nil {
		return nil, rd.fail(err, "schema")
	}
	rd.plan.batch = !opts.noBatch && rd.plan.batchable()
	return rd, nil
}

// checkMetadata bounds every count and offset of the footer by the file,
// before anything is allocated from them.
func (r *Reader) checkMetadata() error {
	md := r.pf.MetaData()
	var rows int64
	for g := 0; g < md.NumRowGroups(); g++ {
		rgm := md.RowGroup(g)
		n := rgm.NumRows()
		if n < 0 {
			return r.fail(nil, "row group %d: negative row count %d", g, n)
		}
		if rgm.NumColumns() != md.Schema.NumColumns() {
			return r.fail(nil, "row group %d: %d column chunks for %d columns", g, rgm.NumColumns(), md.Schema.NumColumns())
		}
		rows += n
		for c := 0; c < rgm.NumColumns(); c++ {
			cc, err := rgm.ColumnChunk(c)
			if err != nil {
				return r.fail(err, "row group %d column %d", g, c)
			}
			start, length := chunkRange(cc)
			if start < 4 || length < 0 || length > r.size || start > r.size-8-length {
				return r.fail(nil, "row group %d column %s: chunk at byte %d of %d bytes does not fit the %d-byte file",
					g, md.Schema.Column(c).Path(), start, length, r.size)
			}
			if cc.NumValues() < 0 {
				return r.fail(nil, "row group %d column %s: negative value count", g, md.Schema.Column(c).Path())
			}
		}
	}
	if rows != md.NumRows {
		return r.fail(nil, "footer says %d rows, its row groups hold %d", md.NumRows, rows)
	}
	return nil
}

func chunkRange(cc *metadata.ColumnChunkMetaData) (start, length int64) {
	start = cc.DataPageOffset()
	if cc.HasDictionaryPage() && cc.DictionaryPageOffset() > 0 && start > cc.DictionaryPageOffset() {
		start = cc.DictionaryPageOffset()
	}
	return start, cc.TotalCompressedSize()
}

// oldDictPadding is how far past its stated end a chunk of a parquet-mr
// file older than 1.2.9 may reach: those writers left the dictionary page
// header out of the chunk size (PARQUET-816); arrow-go reads as far.
const oldDictPadding = 100

// Next advances to the next record; false at the end or on an error (see
// Err).
func (r *Reader) Next() (ok bool) {
	if r.err != nil {
		return false
	}
	defer func() {
		if p := recover(); p != nil {
			r.err = r.fail(fmt.Errorf("%v", p), "row group %d: undecodable data", r.rg-1)
			ok = false
		}
	}()
	for r.left == 0 {
		if r.inGroup {
			if err := r.endGroup(); err != nil {
				r.err = err
				return false
			}
		}
		if r.rg >= r.pf.NumRowGroups() {
			return false
		}
		if err := r.openGroup(r.rg); err != nil {
			r.err = err
			return false
		}
		r.rg++
	}
	g, row := r.rg-1, r.groupRow
	fail := func(err error) bool {
		r.err = r.fail(nil, "row group %d row %d: %v", g, row, err)
		return false
	}
	if r.plan.batch {
		b := &r.bat
		if b.i == b.n && b.err == nil {
			r.formatBatch()
		}
		if b.i < b.n {
			if err := r.nextInBatch(); err != nil {
				return fail(err)
			}
			return true
		}
		if b.err != nil {
			// The row's key first, as without batches.
			if kd := r.plan.keyDirect; kd != nil && b.n < len(b.keys) && b.keys[b.n] < 0 {
				return fail(fmt.Errorf("null key"))
			}
			return fail(b.err)
		}
		// No batch: this row is formatted alone.
	}
	if r.rr != nil && r.row >= r.rows && !r.nextBatch() {
		return false
	}
	i := r.row
	r.row++
	r.left--
	r.groupRow++
	for _, d := range r.plan.flat {
		if d.pos < d.n {
			d.step()
		} else if err := d.refill(); err != nil {
			return fail(err)
		}
	}
	var key []byte
	var err error
	switch {
	case r.plan.keyPath == nil:
		r.keyBuf = strconv.AppendInt(r.keyBuf[:0], r.n, 10)
		key = r.keyBuf
	case r.plan.keyDirect != nil:
		key, err = r.plan.keyDirect.key(&r.keyBuf)
	default:
		key, err = r.cols.key(i, &r.keyBuf)
	}
	if err != nil {
		return fail(err)
	}
	r.key = key
	switch {
	case r.plan.valDirect != nil:
		v, ok := r.plan.valDirect.bytes()
		if !ok {
			return fail(fmt.Errorf("value column %s is null", r.format.ValueColumn))
		}
		r.val = v
	case r.cols.value != nil:
		if r.cols.value.IsNull(i) {
			return fail(fmt.Errorf("value column %s is null", r.format.ValueColumn))
		}
		r.val = binaryValue(r.cols.value, i)
	default:
		r.valBuf, err = r.appendJSON(r.valBuf[:0], i)
		if err != nil {
			return fail(err)
		}
		r.val = r.valBuf
	}
	r.n++
	return true
}

// nextInBatch gives the batch's next row.
func (r *Reader) nextInBatch() error {
	b := &r.bat
	i := b.i
	b.i++
	r.left--
	r.groupRow++
	if kd := r.plan.keyDirect; kd != nil {
		k := b.keys[i]
		if k < 0 {
			return fmt.Errorf("null key")
		}
		key, err := kd.keyAt(int(k), &r.keyBuf)
		if err != nil {
			return err
		}
		r.key = key
	} else {
		r.keyBuf = strconv.AppendInt(r.keyBuf[:0], r.n, 10)
		r.key = r.keyBuf
	}
	r.val = b.rows[i]
	r.n++
	return nil
}

// Key returns the current key, valid until the next call to Next.
func (r *Reader) Key() []byte { return r.key }

// Value returns the current value, valid until the next call to Next.
func (r *Reader) Value() []byte { return r.val }

// Err returns the error that stopped Next, or nil at the end.
func (r *Reader) Err() error { return r.err }

// Rows returns how many rows the file holds, by its footer.
func (r *Reader) Rows() int64 { return r.pf.NumRows() }

// Close releases the reader's buffers. It does not close the ReaderAt.
func (r *Reader) Close() error {
	r.releaseBatch()
	for _, d := range r.plan.direct {
		d.close()
	}
	if r.rr != nil {
		r.rr.Release()
		r.rr = nil
	}
	if a, ok := r.opts.Alloc.(*poolAlloc); ok {
		a.release()
	}
	return nil
}

func (r *Reader) releaseBatch() {
	if r.batch != nil {
		r.batch.Release()
		r.batch = nil
	}
	r.rows, r.row = 0, 0
}

// nextBatch decodes the next batch of rows of arrow-go's record reader,
// which must have one: the open group has rows left.
func (r *Reader) nextBatch() bool {
	r.releaseBatch()
	for r.rr.Next() {
		b := r.rr.RecordBatch()
		n := int(b.NumRows())
		if n == 0 {
			continue
		}
		b.Retain()
		r.batch = b
		cols, err := r.plan.bind(b)
		if err != nil {
			r.err = r.fail(err, "row group %d", r.rg-1)
			return false
		}
		r.cols = cols
		r.rows, r.row = n, 0
		return true
	}
	if err := r.rr.Err(); err != nil && err != io.EOF {
		r.err = r.fail(err, "row group %d", r.rg-1)
		return false
	}
	r.err = r.fail(nil, "row group %d: its columns end after %d of its %d rows", r.rg-1, r.groupRow, r.groupRow+r.left)
	return false
}

// endGroup checks that every column of the open group ended with it.
func (r *Reader) endGroup() error {
	g := r.rg - 1
	r.inGroup = false
	if r.rr != nil {
		more := r.row < r.rows
		r.releaseBatch()
		for !more && r.rr.Next() {
			more = r.rr.RecordBatch().NumRows() > 0
		}
		err := r.rr.Err()
		r.rr.Release()
		r.rr = nil
		if err != nil && err != io.EOF {
			return r.fail(err, "row group %d", g)
		}
		if more {
			return r.fail(nil, "row group %d: its columns hold more than its %d rows", g, r.groupRow)
		}
	}
	for _, d := range r.plan.direct {
		if err := d.finish(); err != nil {
			return r.fail(err, "row group %d", g)
		}
	}
	return nil
}

// openGroup checks the pages of the group's selected chunks, then starts
// decoding it.
func (r *Reader) openGroup(g int) error {
	md := r.pf.MetaData()
	rgm := md.RowGroup(g)
	old := r.pf.WriterVersion() != nil && r.pf.WriterVersion().LessThan(metadata.Parquet816FixedVersion)
	for _, c := range r.plan.allLeaves() {
		cc, err := rgm.ColumnChunk(c)
		if err != nil {
			return r.fail(err, "row group %d column %d", g, c)
		}
		start, length := chunkRange(cc)
		if old {
			length = min(length+oldDictPadding, r.size-start)
		}
		if err := r.scan.scanChunk(start, length, cc.NumValues(), cc.Compression()); err != nil {
			return r.fail(err, "row group %d column %s", g, md.Schema.Column(c).Path())
		}
	}
	r.inGroup = true
	r.left, r.groupRow = rgm.NumRows(), 0
	r.bat.reset()
	if r.left == 0 {
		return nil
	}
	if len(r.plan.leaves) > 0 {
		rr, err := r.fr.GetRecordReader(context.Background(), r.plan.leaves, []int{g})
		if err != nil {
			return r.fail(err, "row group %d", g)
		}
		r.rr = rr
	}
	rg := r.pf.RowGroup(g)
	for _, d := range r.plan.direct {
		if err := d.open(rg); err != nil {
			return r.fail(err, "row group %d column %s", g, d.name)
		}
	}
	return nil
}

// plan is what NewReader resolved from the schema: which leaves to read,
// how, and where the key, the value and the JSON fields are.
type plan struct {
	leaves    []int           // leaf columns arrow-go's record reader decodes
	direct    []*directColumn // leaf columns read directly (direct.go), each once
	flat      []*directColumn // those of direct that are not lists: advanced every row
	keyPath   []string        // dotted key path
	keyDirect *directColumn   // the key column, when read directly
	valPath   []string        // dotted value path; nil for JSON
	valDirect *directColumn   // the value column, when read directly
	fields    []field         // JSON fields in file order
	batch     bool            // rows are formatted in batches (rows.go)
}

// field is one top-level column of a JSON value.
type field struct {
	name   string
	quoted []byte // '{' (the first) or ',', the JSON-quoted name, ':'
	// quoted16 holds quoted padded to 16 bytes, when it fits (rows.go).
	quoted16 [16]byte

	direct *directColumn // nil: the batch's column of that name
}

// newPlan resolves f against the file's schema; direct says whether
// leaves that can be read directly are (INT96 ones always are).
func newPlan(pf *file.Reader, fr *pqarrow.FileReader, f Format, direct bool) (plan, error) {
	sc := pf.MetaData().Schema
	asc, err := fr.Schema()
	if err != nil {
		return plan{}, err
	}
	var p plan
	tops := make([]string, 0, asc.NumFields())
	for _, fl := range asc.Fields() {
		tops = append(tops, fl.Name)
	}
	missing := func(what, col string) error {
		msg := fmt.Sprintf("%s %q is not in the file (its columns: %s)", what, col, strings.Join(tops, ", "))
		if f.Implicit() {
			msg += "; there is no _FORMAT, so the columns \"key\" and \"value\" were looked for: " + HowToWrite
		}
		return fmt.Errorf("%s", msg)
	}
	// byLeaf finds or makes the direct column of leaf i, whose top-level
	// field has the arrow type t; nil when it is read by arrow-go.
	byLeaf := func(i int, t arrow.DataType) *directColumn {
		for _, d := range p.direct {
			if d.leaf == i {
				return d
			}
		}
		if t == nil || (!direct && sc.Column(i).PhysicalType() != parquet.Types.Int96) {
			return nil
		}
		d := newDirect(sc, i, t)
		if d != nil {
			p.direct = append(p.direct, d)
			if !d.list {
				p.flat = append(p.flat, d)
			}
		}
		return d
	}
	topType := func(name string) arrow.DataType {
		if idx := asc.FieldIndices(name); len(idx) == 1 {
			return asc.Field(idx[0]).Type
		}
		return nil
	}
	// A zero KeyColumn (which ParseFormat refuses) keys rows by their
	// ordinal: how tests read the files that have no key column.
	if f.KeyColumn != "" {
		p.keyPath = strings.Split(f.KeyColumn, ".")
		keyLeaf, err := findLeaf(sc, p.keyPath)
		if err != nil {
			return plan{}, missing("key column", f.KeyColumn)
		}
		kt, err := typeAt(asc, p.keyPath)
		if err != nil {
			return plan{}, fmt.Errorf("key column %s: %w", f.KeyColumn, err)
		}
		if !keyType(kt) || sc.Column(keyLeaf).PhysicalType() == parquet.Types.Int96 {
			return plan{}, fmt.Errorf("key column %s is %s: a key must be a string, binary or integer column", f.KeyColumn, kt)
		}
		if len(p.keyPath) == 1 && direct {
			if d := newDirect(sc, keyLeaf, kt); d != nil && !d.list && keyKind(d.kind) {
				p.direct = append(p.direct, d)
				p.flat = append(p.flat, d)
				p.keyDirect = d
			}
		}
		if p.keyDirect == nil {
			p.leaves = append(p.leaves, keyLeaf)
		}
	}
	if !f.JSON() {
		p.valPath = strings.Split(f.ValueColumn, ".")
		valLeaf, err := findLeaf(sc, p.valPath)
		if err != nil {
			return plan{}, missing("value column", f.ValueColumn)
		}
		vt, err := typeAt(asc, p.valPath)
		if err != nil {
			return plan{}, fmt.Errorf("value column %s: %w", f.ValueColumn, err)
		}
		if !binaryType(vt) {
			return plan{}, fmt.Errorf("value column %s is %s: a value column must be binary or string (leave value_column out to serve the row as JSON)", f.ValueColumn, vt)
		}
		if len(p.valPath) == 1 {
			if d := byLeaf(valLeaf, vt); d != nil && (d.kind == dkString || d.kind == dkBinary) {
				p.valDirect = d
			}
		}
		if p.valDirect == nil && !slices.Contains(p.leaves, valLeaf) {
			p.leaves = append(p.leaves, valLeaf)
		}
		return p, nil
	}
	chosen := map[string]bool{}
	switch {
	case len(f.Columns) > 0:
		for _, c := range f.Columns {
			if !slices.Contains(tops, c) {
				return plan{}, fmt.Errorf("column %q of columns is not in the file (its columns: %s)", c, strings.Join(tops, ", "))
			}
			chosen[c] = true
		}
	default:
		for _, t := range tops {
			chosen[t] = !slices.Contains(f.ExcludeColumns, t) && !(len(p.keyPath) == 1 && t == p.keyPath[0])
		}
	}
	for i := 0; i < sc.NumColumns(); i++ {
		col := sc.Column(i)
		path := col.ColumnPath()
		if !chosen[path[0]] {
			continue
		}
		if col.PhysicalType() == parquet.Types.Int96 && len(path) != 1 {
			return plan{}, fmt.Errorf("column %s: INT96 inside a nested column is not supported", col.Path())
		}
		if d := byLeaf(i, topType(path[0])); d != nil {
			p.fields = append(p.fields, field{name: path[0], direct: d})
			continue
		}
		if !slices.Contains(p.leaves, i) {
			p.leaves = append(p.leaves, i)
		}
		if n := len(p.fields); n == 0 || p.fields[n-1].name != path[0] {
			p.fields = append(p.fields, field{name: path[0]})
		}
	}
	for k := range p.fields {
		lead := byte(',')
		if k == 0 {
			lead = '{'
		}
		p.fields[k].quoted = append(wire.AppendJSONString([]byte{lead}, p.fields[k].name), ':')
		copy(p.fields[k].quoted16[:], p.fields[k].quoted)
	}
	slices.Sort(p.leaves)
	return p, nil
}

// allLeaves lists every leaf the plan reads, for the page scan.
func (p *plan) allLeaves() []int {
	out := slices.Clone(p.leaves)
	for _, d := range p.direct {
		out = append(out, d.leaf)
	}
	return out
}

// findLeaf returns the index of the leaf column at path, which must not
// cross a repeated field (a key or value is one per row).
func findLeaf(sc *schema.Schema, path []string) (int, error) {
	for i := 0; i < sc.NumColumns(); i++ {
		col := sc.Column(i)
		if slices.Equal([]string(col.ColumnPath()), path) {
			if col.MaxRepetitionLevel() > 0 {
				return 0, fmt.Errorf("%s is inside a repeated field", col.Path())
			}
			return i, nil
		}
	}
	return 0, fmt.Errorf("no leaf column %s", strings.Join(path, "."))
}

// typeAt returns the arrow type at a dotted path through structs.
func typeAt(sc *arrow.Schema, path []string) (arrow.DataType, error) {
	idx := sc.FieldIndices(path[0])
	if len(idx) != 1 {
		return nil, fmt.Errorf("%d top-level columns named %q", len(idx), path[0])
	}
	t := sc.Field(idx[0]).Type
	for _, name := range path[1:] {
		st, ok := t.(*arrow.StructType)
		if !ok {
			return nil, fmt.Errorf("%s is not a struct", t)
		}
		f, ok := st.FieldByName(name)
		if !ok {
			return nil, fmt.Errorf("no field %q", name)
		}
		t = f.Type
	}
	return t, nil
}

func keyType(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.STRING, arrow.LARGE_STRING, arrow.BINARY, arrow.LARGE_BINARY, arrow.FIXED_SIZE_BINARY,
		arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		return true
	}
	return false
}

func binaryType(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.STRING, arrow.LARGE_STRING, arrow.BINARY, arrow.LARGE_BINARY, arrow.FIXED_SIZE_BINARY:
		return true
	}
	return false
}

// binaryValue returns the bytes of a binary or string array's row i.
func binaryValue(a arrow.Array, i int) []byte {
	switch a := a.(type) {
	case *array.String:
		return unsafeBytes(a.Value(i))
	case *array.LargeString:
		return unsafeBytes(a.Value(i))
	case *array.Binary:
		return a.Value(i)
	case *array.LargeBinary:
		return a.Value(i)
	case *array.FixedSizeBinary:
		return a.Value(i)
	}
	return nil
}
