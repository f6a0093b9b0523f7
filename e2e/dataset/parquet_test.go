package dataset

import (
	"os"
	"path/filepath"
	"testing"

	"spangle/shared/parquetkv"
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
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := f.Stat()
		r, err := parquetkv.NewReader(f, st.Size(), path, spec, parquetkv.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for r.Next() {
			k := string(r.Key())
			if want := ParquetValue("v1", k); string(r.Value()) != want {
				t.Fatalf("%s = %s; want %s", k, r.Value(), want)
			}
			if seen[k] {
				t.Fatalf("%s twice", k)
			}
			seen[k] = true
		}
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
		r.Close()
		f.Close()
	}
	if len(seen) != 1000 {
		t.Fatalf("%d keys", len(seen))
	}
}
