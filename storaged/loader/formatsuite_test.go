package loader

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"spangle/shared/seqfile"
	"spangle/shared/sparkey"
	"spangle/storaged/internal/testutil"
)

// formatCase writes a version of recs in n partitions in one format and
// returns the path of one of its data files (to damage) and the error a
// damaged data file gives.
type formatCase struct {
	name    string
	write   func(t *testing.T, root string, n int, recs []testutil.Record) (dataFile string)
	corrupt error
}

var formatCases = []formatCase{
	{"SequenceFile", func(t *testing.T, root string, n int, recs []testutil.Record) string {
		dir := testutil.WriteVersion(t, root, "db", "v1", n, testutil.Sharded, seqfile.WriterOptions{}, recs)
		return filepath.Join(dir, "part-00001")
	}, seqfile.ErrCorrupt},
	{"Sparkey", func(t *testing.T, root string, n int, recs []testutil.Record) string {
		dir := testutil.WriteSparkeyVersion(t, root, "db", "v1", n, sparkey.WriterOptions{Compression: sparkey.Snappy}, recs)
		return filepath.Join(dir, "part-00001.spl")
	}, sparkey.ErrCorrupt},
}

// TestFormatSuite is what every input format passes: a version loads
// whole, by the fast path when pre-sharded, a held subset loads only its
// partitions, and a truncated data file fails the load naming the file
// and the offset.
func TestFormatSuite(t *testing.T) {
	recs := testutil.Records(4000, "v1")
	for _, fc := range formatCases {
		t.Run(fc.name+"/whole", func(t *testing.T) {
			root := t.TempDir()
			fc.write(t, root, 4, recs)
			res, parts, err := load(t, root, "db", "v1", nil, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(parts) != 4 || res.Records != int64(len(recs)) || res.FastFiles != 4 {
				t.Fatalf("%d partitions, %+v: want 4, every record, 4 fast units", len(parts), res)
			}
			for _, r := range recs {
				if v, err := get(parts, r.Key); err != nil || !bytes.Equal(v, r.Value) {
					t.Fatalf("%q = %q, %v", r.Key, v, err)
				}
			}
		})
		t.Run(fc.name+"/held", func(t *testing.T) {
			root := t.TempDir()
			fc.write(t, root, 4, recs)
			_, parts, err := load(t, root, "db", "v1", []int{2}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			for p, part := range parts {
				if (part != nil) != (p == 2) {
					t.Fatalf("partition %d opened: %v", p, part != nil)
				}
			}
		})
		t.Run(fc.name+"/truncated", func(t *testing.T) {
			root := t.TempDir()
			path := fc.write(t, root, 4, recs)
			b, _ := os.ReadFile(path)
			os.WriteFile(path, b[:len(b)*2/3], 0o644)
			_, _, err := load(t, root, "db", "v1", nil, Options{})
			if !errors.Is(err, fc.corrupt) || !strings.Contains(err.Error(), "db/v1/"+filepath.Base(path)) || !strings.Contains(err.Error(), "at byte") {
				t.Fatalf("%v: want %v naming db/v1/%s and an offset", err, fc.corrupt, filepath.Base(path))
			}
		})
	}
}
