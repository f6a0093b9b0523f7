package dataset

import (
	"os"
	"path/filepath"
	"testing"

	"spangle/shared/parquetkv"
	"spangle/shared/versiontest"
)

// TestWriteParquet: a Parquet version holds every key once, spread over
// its files, with the _FORMAT beside it, and each row reads back as
// ParquetValue says, byte for byte.
func TestWriteParquet(t *testing.T) {
	root := t.TempDir()
	dir, err := Write(root, Spec{DB: "db", Version: "v1", Keys: 1000, Partitions: 3, Parquet: true})
	if err != nil {
		t.Fatal(err)
	}
	marker, err := os.ReadFile(filepath.Join(root, "db", parquetkv.FormatFile))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := parquetkv.ParseFormat(marker)
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "part-*-c000.snappy.parquet"))
	if len(files) != 3 {
		t.Fatalf("files %v", files)
	}
	seen := map[string]bool{}
	for _, path := range files {
		versiontest.ReadParquet(t, path, spec, func(key, value []byte) {
			k := string(key)
			if want := ParquetValue("v1", k); string(value) != want {
				t.Fatalf("%s = %s; want %s", k, value, want)
			}
			if seen[k] {
				t.Fatalf("%s twice", k)
			}
			seen[k] = true
		})
	}
	if len(seen) != 1000 {
		t.Fatalf("%d keys", len(seen))
	}
}
