package dataset

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"testing"

	"spangle/shared/partitioner"
	"spangle/shared/seqfile"
	"spangle/shared/sparkey"
)

func TestAppendKeyAndPath(t *testing.T) {
	if got := string(AppendKey(nil, 42)); got != "key-0000000042" {
		t.Errorf("AppendKey(42) = %q", got)
	}
	if got := string(AppendPath([]byte("x"), 7)); got != "x/bench/key-0000000007" {
		t.Errorf("AppendPath(7) = %q", got)
	}
}

// The written files are pre-sharded as a Hadoop job writes them: file f
// holds exactly the keys of partition f, ascending, with their values;
// Decode reads them all.
func TestWriteIsPreShardedAndDecodes(t *testing.T) {
	for _, comp := range []seqfile.Compression{seqfile.None, seqfile.Block} {
		t.Run(comp.String(), func(t *testing.T) {
			const keys, files = 2000, 4
			ds, err := Write(context.Background(), t.TempDir(), Options{Keys: keys, Files: files, Compression: comp})
			if err != nil {
				t.Fatal(err)
			}
			if len(ds.Files) != files || ds.Bytes == 0 {
				t.Fatalf("files %v, bytes %d", ds.Files, ds.Bytes)
			}
			seen := 0
			for f, path := range ds.Files {
				in, err := os.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				r, err := seqfile.NewReader(in, path)
				if err != nil {
					t.Fatal(err)
				}
				if r.Header().Compression != comp {
					t.Fatalf("compression %v, want %v", r.Header().Compression, comp)
				}
				var prev []byte
				for r.Next() {
					k := r.Key()
					if partitioner.Partition(k, files) != f {
						t.Fatalf("%s holds %q of partition %d", path, k, partitioner.Partition(k, files))
					}
					if prev != nil && bytes.Compare(prev, k) >= 0 {
						t.Fatalf("%s: %q after %q", path, k, prev)
					}
					prev = append(prev[:0], k...)
					i, err := strconv.Atoi(string(k[len("key-"):]))
					if err != nil || !bytes.Equal(r.Value(), Value(i, 100)) {
						t.Fatalf("%s: record %q = %q", path, k, r.Value())
					}
					seen++
				}
				in.Close()
				if r.Err() != nil {
					t.Fatal(r.Err())
				}
			}
			if seen != keys {
				t.Fatalf("files hold %d records, want %d", seen, keys)
			}
			n, err := Decode(context.Background(), ds.Files, 2)
			if err != nil || n != keys {
				t.Fatalf("Decode = %d, %v; want %d", n, err, keys)
			}
		})
	}
}

func TestDecodeReportsCorruption(t *testing.T) {
	ds, err := Write(context.Background(), t.TempDir(), Options{Keys: 500, Files: 1})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(ds.Files[0])
	os.WriteFile(ds.Files[0], b[:len(b)/2], 0o644)
	if _, err := Decode(context.Background(), ds.Files, 1); err == nil {
		t.Fatal("Decode of a truncated file succeeded")
	}
}

// A Sparkey dataset holds the same keys and values, pair f holding
// partition f's keys in ascending order.
func TestWriteSparkey(t *testing.T) {
	const keys, files = 2000, 4
	ds, err := Write(context.Background(), t.TempDir(), Options{Keys: keys, Files: files, Format: FormatSparkey})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for f, logPath := range ds.Files {
		lf, err := os.Open(logPath)
		if err != nil {
			t.Fatal(err)
		}
		defer lf.Close()
		xf, err := os.Open(logPath[:len(logPath)-len(".spl")] + ".spi.sz")
		if err != nil {
			t.Fatal(err)
		}
		defer xf.Close()
		fi, _ := lf.Stat()
		r, err := sparkey.NewReader(lf, fi.Size(), logPath, xf, "index")
		if err != nil {
			t.Fatal(err)
		}
		var prev []byte
		for r.Next() {
			if partitioner.Partition(r.Key(), files) != f || bytes.Compare(prev, r.Key()) >= 0 {
				t.Fatalf("%s: key %q out of place", logPath, r.Key())
			}
			i, _ := strconv.Atoi(string(r.Key()[len("key-"):]))
			if !bytes.Equal(r.Value(), Value(i, 100)) {
				t.Fatalf("%q: wrong value", r.Key())
			}
			prev = append(prev[:0], r.Key()...)
			n++
		}
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
	}
	if n != keys {
		t.Fatalf("%d pairs, want %d", n, keys)
	}
}
