package loader

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"spangle/shared/parquetkv"
	"spangle/shared/versiontest"
	"spangle/storaged/internal/testutil"
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
