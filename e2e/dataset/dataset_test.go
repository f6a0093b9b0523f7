package dataset

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"spangle/shared/partitioner"
	"spangle/shared/seqfile"
	"spangle/shared/sparkey"
)

// readAll returns the records of one file, or the reader's error.
func readAll(t *testing.T, path string) (map[string]string, error) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := seqfile.NewReader(f, path)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for r.Next() {
		out[string(r.Key())] = string(r.Value())
	}
	return out, r.Err()
}

func TestWritePreSharded(t *testing.T) {
	root := t.TempDir()
	dir, err := Write(root, Spec{DB: "db", Version: "v1", Keys: 1000, Partitions: 4})
	if err != nil {
		t.Fatal(err)
	}
	if dir != filepath.Join(root, "db", "v1") {
		t.Fatalf("dir %s", dir)
	}
	seen := 0
	for p := 0; p < 4; p++ {
		recs, err := readAll(t, filepath.Join(dir, fmt.Sprintf("part-%05d", p)))
		if err != nil {
			t.Fatalf("partition %d: %v", p, err)
		}
		for k, v := range recs {
			if got := partitioner.Partition([]byte(k), 4); got != p {
				t.Errorf("key %s in file %d, partition %d", k, p, got)
			}
			if v != Value("v1", k) {
				t.Errorf("key %s: value %q", k, v)
			}
		}
		seen += len(recs)
	}
	if seen != 1000 {
		t.Fatalf("%d records, want 1000", seen)
	}
	entries, err := os.ReadDir(filepath.Join(root, "db"))
	if err != nil || len(entries) != 1 {
		t.Fatalf("db dir holds %v (%v), want only v1", entries, err)
	}
	if _, err := Write(root, Spec{DB: "db", Version: "v1", Keys: 10}); err == nil {
		t.Fatal("writing an existing version succeeded")
	}
}

func TestWriteCorrupt(t *testing.T) {
	root := t.TempDir()
	dir, err := Write(root, Spec{DB: "db", Version: "v2", Keys: 2000, Partitions: 2, Corrupt: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := readAll(t, filepath.Join(dir, "part-00001")); err == nil {
		t.Fatal("the corrupted file reads back without error")
	}
	if _, err := readAll(t, filepath.Join(dir, "part-00000")); err != nil {
		t.Fatalf("the other file: %v", err)
	}
}

// Rewrite replaces each data file in place with the same records and
// leaves no temporary file behind.
func TestRewriteInPlace(t *testing.T) {
	root := t.TempDir()
	spec := Spec{DB: "db", Version: "v1", Keys: 500, Partitions: 3}
	dir, err := Write(root, spec)
	if err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(filepath.Join(dir, "part-00001"))
	if err != nil {
		t.Fatal(err)
	}
	if err := Rewrite(root, spec); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 3 {
		t.Fatalf("%d entries after the rewrite, want the 3 data files", len(entries))
	}
	after, err := os.Stat(filepath.Join(dir, "part-00001"))
	if err != nil {
		t.Fatal(err)
	}
	if os.SameFile(before, after) {
		t.Fatal("part-00001 was not replaced")
	}
	n := 0
	for p := 0; p < 3; p++ {
		recs, err := readAll(t, filepath.Join(dir, fmt.Sprintf("part-%05d", p)))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range recs {
			if v != Value("v1", k) {
				t.Fatalf("key %s: value %q", k, v)
			}
		}
		n += len(recs)
	}
	if n != 500 {
		t.Fatalf("%d records, want 500", n)
	}
	if err := Rewrite(root, Spec{DB: "db", Version: "v9"}); err == nil {
		t.Fatal("rewriting a version that does not exist did not fail")
	}
}

func TestWriteSparkey(t *testing.T) {
	root := t.TempDir()
	dir, err := Write(root, Spec{DB: "db", Version: "v1", Keys: 1000, Partitions: 4, Sparkey: true})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for p := 0; p < 4; p++ {
		base := filepath.Join(dir, fmt.Sprintf("part-%05d", p))
		lf, err := os.Open(base + ".spl")
		if err != nil {
			t.Fatal(err)
		}
		xf, err := os.Open(base + ".spi.sz")
		if err != nil {
			t.Fatal(err)
		}
		fi, _ := lf.Stat()
		r, err := sparkey.NewReader(lf, fi.Size(), base+".spl", xf, base+".spi.sz")
		if err != nil {
			t.Fatal(err)
		}
		for r.Next() {
			k := string(r.Key())
			if partitioner.Partition(r.Key(), 4) != p || string(r.Value()) != Value("v1", k) {
				t.Fatalf("%s: %q = %q in partition %d", base, k, r.Value(), p)
			}
			n++
		}
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
		r.Close()
		lf.Close()
		xf.Close()
	}
	if n != 1000 {
		t.Fatalf("%d pairs, want 1000", n)
	}
}
