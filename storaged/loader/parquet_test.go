package loader

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"spangle/shared/parquetkv"
	"spangle/shared/partitioner"
	"spangle/shared/source"
	"spangle/shared/versiontest"
	"spangle/storaged/internal/testutil"
	"spangle/storaged/table"
)

// writeParquetVersion writes keys k<i> -> v<i> for i in [0,n), spread
// round-robin (not by partition) over files Spark-named Parquet files.
func writeParquetVersion(t *testing.T, root, db, version string, files, n int) {
	t.Helper()
	dir := versiontest.For(t).Write(root, db, version, versiontest.Options{Format: versiontest.Parquet, Files: files, Layout: versiontest.RoundRobin, InPlace: true},
		versiontest.Numbered(n, "k%d", "v%d"))
	if err := os.WriteFile(filepath.Join(dir, ".part-00000.crc"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestParquetVersion loads a Spark-shaped version whose files are not
// pre-sharded: every key lands in its partition, N is the file count.
func TestParquetVersion(t *testing.T) {
	root := t.TempDir()
	writeParquetVersion(t, root, "db", "v1", 4, 5000)
	res, parts, err := load(t, root, "db", "v1", nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 4 || res.Records != 5000 {
		t.Fatalf("%d partitions, %+v", len(parts), res)
	}
	for i := 0; i < 5000; i++ {
		if v, err := get(parts, []byte(fmt.Sprint("k", i))); err != nil || string(v) != fmt.Sprint("v", i) {
			t.Fatalf("k%d = %q, %v", i, v, err)
		}
	}
}

// TestParquetFormatSpec loads real Impala files with a _FORMAT spec:
// integer keys as text, the other columns as JSON.
func TestParquetFormatSpec(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "db", "v1")
	os.MkdirAll(dir, 0o755)
	data, err := os.ReadFile(filepath.Join(testutil.TestData(t), "parquet", "alltypes_plain.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "alltypes_plain.parquet"), data, 0o644)
	spec, err := parquetkv.ParseFormat([]byte(`key_column = "id"` + "\n" + `columns = ["int_col", "timestamp_col"]`))
	if err != nil {
		t.Fatal(err)
	}
	res, parts, err := load(t, root, "db", "v1", nil, Options{Formats: WithParquet(nil, spec)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Records != 8 {
		t.Fatalf("%+v", res)
	}
	if v, err := get(parts, []byte("7")); err != nil || string(v) != `{"int_col":1,"timestamp_col":"2009-04-01T00:01:00Z"}` {
		t.Fatalf("7 = %s, %v", v, err)
	}
	// Without the spec there is no key column: the error says how to
	// write _FORMAT.
	_, _, err = load(t, root, "db", "v1", nil, Options{})
	if !errors.Is(err, parquetkv.ErrCorrupt) || !contains(err.Error(), "db/v1/alltypes_plain.parquet", "_FORMAT") {
		t.Fatalf("err %v", err)
	}
}

// TestParquetBadFile: a page with a bad CRC fails the load, naming the
// file.
func TestParquetBadFile(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "db", "v1"), 0o755)
	data, err := os.ReadFile(filepath.Join(testutil.TestData(t), "parquet", "datapage_v1-corrupt-checksum.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "db", "v1", "part-00002-bad.parquet"), data, 0o644)
	_, _, err = load(t, root, "db", "v1", nil, Options{Formats: WithParquet(nil, parquetkv.Format{KeyColumn: "a", Duplicates: parquetkv.DuplicatesError})})
	if !errors.Is(err, parquetkv.ErrCorrupt) || !contains(err.Error(), "part-00002-bad.parquet", "CRC mismatch") {
		t.Fatalf("err %v", err)
	}
}

// TestParquetMixedWithSequenceFile: a version is one format.
func TestParquetMixedWithSequenceFile(t *testing.T) {
	root := t.TempDir()
	writeParquetVersion(t, root, "db", "v1", 1, 10)
	os.WriteFile(filepath.Join(root, "db", "v1", "part-r-00001"), []byte("SEQ"), 0o644)
	_, _, err := load(t, root, "db", "v1", nil, Options{})
	if !errors.Is(err, ErrMixedFormats) {
		t.Fatalf("err %v", err)
	}
}

func contains(s string, words ...string) bool {
	for _, w := range words {
		if !strings.Contains(s, w) {
			return false
		}
	}
	return true
}

// writeParquetRows writes one Parquet file of (key, value) string rows in
// root/db/version/name.
func writeParquetRows(t *testing.T, root, db, version, name string, rows [][2]string) {
	t.Helper()
	dir := filepath.Join(root, db, version)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.BinaryTypes.String}, {Name: "body", Type: arrow.BinaryTypes.String}}, nil)
	fh, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	w, err := pqarrow.NewFileWriter(sc, fh, parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(3)), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.NewGoAllocator(), sc)
	defer b.Release()
	for _, r := range rows {
		b.Field(0).(*array.StringBuilder).Append(r[0])
		b.Field(1).(*array.StringBuilder).Append(r[1])
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestParquetDuplicates: a key in two rows fails the version by default,
// naming the key and both rows' files; "first" and "last" keep the row
// first or last by file name, then row, within a file and across files,
// whether the partition's records fit one buffer or are merged from
// several spills.
func TestParquetDuplicates(t *testing.T) {
	root := t.TempDir()
	// Files are listed out of name order on purpose: b before a would be
	// wrong.
	var a, b [][2]string
	for i := 0; i < 300; i++ {
		a = append(a, [2]string{fmt.Sprint("k", i), fmt.Sprint("a", i)})
		b = append(b, [2]string{fmt.Sprint("k", 1000+i), fmt.Sprint("b", i)})
	}
	a[5] = [2]string{"same-file", "a-first"}
	a[250] = [2]string{"same-file", "a-last"}
	a[7] = [2]string{"cross", "a-cross"}
	b[2] = [2]string{"cross", "b-cross"}
	a[9] = [2]string{"three", "a-three"}
	b[0] = [2]string{"three", "b-three-1"}
	b[299] = [2]string{"three", "b-three-2"}
	writeParquetRows(t, root, "db", "v1", "part-00001-b-c000.parquet", b)
	writeParquetRows(t, root, "db", "v1", "part-00000-a-c000.parquet", a)

	spec := func(dup string) []Format {
		f, err := parquetkv.ParseFormat([]byte(fmt.Sprintf("key_column = \"id\"\nvalue_column = \"body\"\nduplicates = %q\n", dup)))
		if err != nil {
			t.Fatal(err)
		}
		return WithParquet(nil, f)
	}
	for _, spill := range []int64{0, 2 << 10} {
		t.Run(fmt.Sprint("spill=", spill), func(t *testing.T) {
			_, _, err := load(t, root, "db", "v1", nil, Options{Formats: spec("error"), SpillBytes: spill, Parallel: 2})
			if !errors.Is(err, ErrDuplicateKey) || !contains(err.Error(), "db/v1/part-0000", "duplicates") {
				t.Fatalf("err %v: want ErrDuplicateKey naming the files", err)
			}
			for dup, want := range map[string]map[string]string{
				"first": {"same-file": "a-first", "cross": "a-cross", "three": "a-three"},
				"last":  {"same-file": "a-last", "cross": "b-cross", "three": "b-three-2"},
			} {
				res, parts, err := load(t, root, "db", "v1", nil, Options{Formats: spec(dup), SpillBytes: spill, Parallel: 2})
				if err != nil {
					t.Fatalf("%s: %v", dup, err)
				}
				if res.Duplicates != 4 || res.Records != 600 {
					t.Errorf("%s: %+v: want 600 records, 4 left out", dup, res)
				}
				if spill > 0 && res.Runs > int64(len(parts)) {
					t.Errorf("%s: %d runs for %d partitions: the spills were not merged", dup, res.Runs, len(parts))
				}
				for k, v := range want {
					if got, err := get(parts, []byte(k)); err != nil || string(got) != v {
						t.Errorf("%s: %s = %q, %v; want %q", dup, k, got, err, v)
					}
				}
				if got, err := get(parts, []byte("k299")); err != nil || string(got) != "a299" {
					t.Errorf("%s: k299 = %q, %v", dup, got, err)
				}
			}
		})
	}
}

// TestParquetSpillsRemoved: a load that merged spills leaves only the
// partitions' tables behind.
func TestParquetSpillsRemoved(t *testing.T) {
	root := t.TempDir()
	writeParquetVersion(t, root, "db", "v1", 2, 3000)
	f, _ := parquetkv.ParseFormat([]byte("key_column = \"key\"\nvalue_column = \"value\"\nduplicates = \"last\"\n"))
	src, files := testutil.OpenVersion(t, root, "db", "v1")
	out := t.TempDir()
	res, err := Load(context.Background(), Request{Source: src, DB: "db", Version: "v1", Files: files,
		Dir: func(p int) string { return filepath.Join(out, fmt.Sprint(p)) }},
		Options{Formats: WithParquet(nil, f), SpillBytes: 4 << 10, Build: table.BuildOptions{NoSync: true}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Runs != 2 || res.Records != 3000 {
		t.Fatalf("%+v: want one run per partition", res)
	}
	left, _ := filepath.Glob(filepath.Join(out, "*", "spill-*"))
	if len(left) > 0 {
		t.Fatalf("spill files left: %v", left)
	}
}

// TestParquetDuplicateNamesKeyAndRows: the error says which key and the
// rows of both records, within one file.
func TestParquetDuplicateNamesKeyAndRows(t *testing.T) {
	root := t.TempDir()
	writeParquetRows(t, root, "db", "v1", "part-00000.parquet", [][2]string{{"x", "1"}, {"dup\n", "2"}, {"y", "3"}, {"dup\n", "4"}})
	f, _ := parquetkv.ParseFormat([]byte("key_column = \"id\"\nvalue_column = \"body\"\n"))
	_, _, err := load(t, root, "db", "v1", nil, Options{Formats: WithParquet(nil, f)})
	if !errors.Is(err, ErrDuplicateKey) || !contains(err.Error(), `"dup\n"`, "db/v1/part-00000.parquet record 2", "db/v1/part-00000.parquet record 4") {
		t.Fatalf("err %v", err)
	}
}

// TestParquetPartitionsAndContentType: _FORMAT's partitions sets N
// whatever the file count; content_type (or JSON) is the layout's.
func TestParquetPartitionsAndContentType(t *testing.T) {
	root := t.TempDir()
	writeParquetVersion(t, root, "db", "v1", 2, 1000)
	f, err := parquetkv.ParseFormat([]byte("key_column = \"key\"\nvalue_column = \"value\"\npartitions = 5\ncontent_type = \"image/png\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	formats := WithParquet(nil, f)
	res, parts, err := load(t, root, "db", "v1", nil, Options{Formats: formats})
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 5 || res.Records != 1000 {
		t.Fatalf("%d partitions, %+v; want 5", len(parts), res)
	}
	for i := 0; i < 1000; i++ {
		if v, err := get(parts, []byte(fmt.Sprint("k", i))); err != nil || string(v) != fmt.Sprint("v", i) {
			t.Fatalf("k%d = %q, %v", i, v, err)
		}
	}
	_, files := testutil.OpenVersion(t, root, "db", "v1")
	for _, c := range []struct {
		marker string
		n      int
		ctype  string
	}{
		{"key_column = \"key\"\nvalue_column = \"value\"\npartitions = 5\ncontent_type = \"image/png\"\n", 5, "image/png"},
		{"key_column = \"key\"\nvalue_column = \"value\"\n", 2, ""},
		{"key_column = \"key\"\n", 2, "application/json"},
	} {
		f, err := parquetkv.ParseFormat([]byte(c.marker))
		if err != nil {
			t.Fatal(err)
		}
		l, err := Detect(files, WithParquet(nil, f))
		if err != nil || l.Partitions != c.n || l.ContentType != c.ctype {
			t.Errorf("%q: %d partitions, content type %q, %v; want %d, %q", c.marker, l.Partitions, l.ContentType, err, c.n, c.ctype)
		}
	}
	if n, err := NumPartitions(files, nil); err != nil || n != 2 {
		t.Errorf("without a marker: %d, %v", n, err)
	}
}

// sequentialSource hides its files' ReadAt and Size, as S3's readers
// have none.
type sequentialSource struct{ source.Source }

func (s sequentialSource) Open(ctx context.Context, db, version, name string) (io.ReadCloser, error) {
	rc, err := s.Source.Open(ctx, db, version, name)
	return struct{ io.ReadCloser }{rc}, err
}

// A local Parquet file is read in place through the source's ReadAt, its
// bytes counted as read, not copied to a temporary file first; a file
// whose source reads only in sequence is copied, as before.
func TestParquetReadInPlace(t *testing.T) {
	root := t.TempDir()
	writeParquetVersion(t, root, "db", "v1", 1, 3000)
	src, files := testutil.OpenVersion(t, root, "db", "v1")
	read := func(s source.Source, tmp string) (int, int64, error) {
		var n atomic.Int64
		in := Input{src: s, db: "db", version: "v1", read: &n}
		f := ParquetFormat{Spec: parquetkv.DefaultFormat(), TempDir: tmp}
		r, err := f.Open(context.Background(), Unit{Files: files[:1], Partition: -1}, in)
		if err != nil {
			return 0, 0, err
		}
		defer r.Close()
		rows := 0
		for r.Next() {
			if want := "v" + string(r.Key()[1:]); string(r.Value()) != want {
				return rows, 0, fmt.Errorf("row %d: %q = %q, want %q", rows, r.Key(), r.Value(), want)
			}
			rows++
		}
		return rows, n.Load(), r.Err()
	}
	none := filepath.Join(t.TempDir(), "none") // a copy there fails
	rows, n, err := read(src, none)
	if err != nil || rows != 3000 {
		t.Fatalf("read in place: %d rows, %v", rows, err)
	}
	if size := files[0].Size; n < size/2 || n > 2*size {
		t.Fatalf("read in place: %d bytes counted of a %d-byte file", n, size)
	}
	if _, _, err := read(sequentialSource{src}, none); err == nil || !strings.Contains(err.Error(), "copying") {
		t.Fatalf("a sequential source's file was not copied first: %v", err)
	}
	tmp := t.TempDir()
	if rows, n, err := read(sequentialSource{src}, tmp); err != nil || rows != 3000 || n != files[0].Size {
		t.Fatalf("copied first: %d rows, %d bytes counted of %d, %v", rows, n, files[0].Size, err)
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Fatalf("temporary copies left: %v", left)
	}

	// A file cut short while it is read in place fails as changed (a
	// source error, retried), not as bad data.
	in := Input{src: src, db: "db", version: "v1"}
	r, err := ParquetFormat{Spec: parquetkv.DefaultFormat(), TempDir: none}.Open(context.Background(), Unit{Files: files[:1], Partition: -1}, in)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := os.Truncate(filepath.Join(root, "db", "v1", files[0].Name), files[0].Size/2); err != nil {
		t.Fatal(err)
	}
	rows = 0
	for r.Next() {
		rows++
	}
	if err := r.Err(); !errors.Is(err, source.ErrChanged) || errors.Is(err, parquetkv.ErrCorrupt) {
		t.Fatalf("after %d rows of a file cut short: %v; want source.ErrChanged, not parquetkv.ErrCorrupt", rows, err)
	}
}

// A unit's pending records are held in a buffer the next unit reuses
// (st.pendingFree): after a unit that committed its run, one that ended
// before its pending records filled, and one whose order broke early,
// every partition holds its own keys only, each with its own value.
func TestParquetPendingBufferReused(t *testing.T) {
	root := t.TempDir()
	const n = 4
	var byPart [n][]string
	for i := 0; len(byPart[0]) < 1500 || len(byPart[2]) < 1200 || len(byPart[3]) < 10; i++ {
		k := fmt.Sprintf("k%07d", i)
		p := partitioner.Partition([]byte(k), n)
		byPart[p] = append(byPart[p], k)
	}
	rows := func(file int, keys ...string) [][2]string {
		var out [][2]string
		for _, k := range keys {
			out = append(out, [2]string{k, fmt.Sprintf("v%d-%s", file, k)})
		}
		return out
	}
	files := [][][2]string{
		rows(0, byPart[0][:1500]...),                          // commits its run after pendingRecords
		rows(1, byPart[1][:7]...),                             // ends before its pending records fill
		rows(2, append(byPart[2][:600:600], byPart[3][0])...), // its order breaks before they fill
		rows(3, byPart[3][1:10]...),
	}
	for f, r := range files {
		writeParquetRows(t, root, "db", "v1", fmt.Sprintf("part-%05d-c000.parquet", f), r)
	}
	spec, err := parquetkv.ParseFormat([]byte("key_column = \"id\"\nvalue_column = \"body\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	res, parts, err := load(t, root, "db", "v1", nil, Options{Parallel: 1, Formats: WithParquet(nil, spec)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Records != 1500+7+601+9 {
		t.Fatalf("%+v", res)
	}
	for f, r := range files {
		for _, kv := range r {
			k := []byte(kv[0])
			p := partitioner.Partition(k, n)
			if v, err := parts[p].Get(nil, k); err != nil || string(v) != kv[1] {
				t.Fatalf("file %d: %s = %q, %v; want %q", f, k, v, err, kv[1])
			}
			for q := range n {
				if v, err := parts[q].Get(nil, k); q != p && err == nil {
					t.Fatalf("file %d: %s (partition %d) found in partition %d: %q", f, k, p, q, v)
				}
			}
		}
	}
}
