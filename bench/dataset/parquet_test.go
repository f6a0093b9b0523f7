package dataset

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"spangle/shared/parquetkv"
	"spangle/shared/partitioner"
	"spangle/shared/versiontest"
)

// TestWriteParquet: both Parquet datasets hold every key once, in its
// partition's file; the key-value one reads with the default columns and
// the features one, through its _FORMAT, as a JSON object of 11 fields.
func TestWriteParquet(t *testing.T) {
	for _, format := range []string{FormatParquet, FormatParquetFeatures} {
		t.Run(format, func(t *testing.T) {
			root := t.TempDir()
			ds, err := Write(context.Background(), root, Options{Keys: 3000, Files: 3, Format: format})
			if err != nil {
				t.Fatal(err)
			}
			spec := parquetkv.DefaultFormat()
			if format == FormatParquetFeatures {
				marker, err := os.ReadFile(filepath.Join(root, DB, parquetkv.FormatFile))
				if err != nil {
					t.Fatal(err)
				}
				if spec, err = parquetkv.ParseFormat(marker); err != nil {
					t.Fatal(err)
				}
			}
			n := 0
			for part, path := range ds.Files {
				versiontest.ReadParquet(t, path, spec, func(key, value []byte) {
					n++
					if p := partitioner.Partition(key, 3); p != part {
						t.Fatalf("%s in file %d, of partition %d", key, part, p)
					}
					if format == FormatParquet {
						return
					}
					var row map[string]any
					if err := json.Unmarshal(value, &row); err != nil || len(row) != 11 {
						t.Fatalf("%s: %s: %v", key, value, err)
					}
				})
			}
			if n != 3000 {
				t.Fatalf("%d rows", n)
			}
		})
	}
}
