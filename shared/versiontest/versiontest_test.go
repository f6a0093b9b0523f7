package versiontest_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"spangle/shared/parquetkv"
	"spangle/shared/partitioner"
	"spangle/shared/seqfile"
	"spangle/shared/sparkey"
	"spangle/shared/versiontest"
)

// recordReader is what the three formats' readers have in common.
type recordReader interface {
	Next() bool
	Key() []byte
	Value() []byte
	Err() error
}

// readFile reads every record of one data file of format f.
func readFile(t *testing.T, f versiontest.Format, path string) []versiontest.Record {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r recordReader
	switch f {
	case versiontest.SequenceFile:
		r, err = seqfile.NewReader(bytes.NewReader(data), path)
	case versiontest.Sparkey:
		ix, ierr := os.ReadFile(strings.TrimSuffix(path, ".spl") + ".spi.sz")
		if ierr != nil {
			t.Fatal(ierr)
		}
		r, err = sparkey.NewReader(bytes.NewReader(data), int64(len(data)), path, bytes.NewReader(ix), "index")
	case versiontest.Parquet:
		r, err = parquetkv.NewReader(bytes.NewReader(data), int64(len(data)), path, parquetkv.DefaultFormat(), parquetkv.Options{})
	}
	if err != nil {
		t.Fatal(err)
	}
	switch c := r.(type) {
	case interface{ Close() }:
		defer c.Close()
	case interface{ Close() error }:
		defer c.Close()
	}
	var out []versiontest.Record
	for r.Next() {
		out = append(out, versiontest.Record{Key: bytes.Clone(r.Key()), Value: bytes.Clone(r.Value())})
	}
	if err := r.Err(); err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	return out
}

// TestEveryFormatReadsBack writes one version per format, sharded and
// sorted, and reads each file back with the format's own reader: every
// record is in its partition's file, in key order, and the version has
// its marker and no hidden directory left beside it.
func TestEveryFormatReadsBack(t *testing.T) {
	var recs []versiontest.Record
	want := map[string]string{}
	for i := 99; i >= 0; i-- {
		recs = append(recs, versiontest.Record{Key: fmt.Appendf(nil, "key-%03d", i), Value: fmt.Appendf(nil, "v%d", i)})
		want[fmt.Sprintf("key-%03d", i)] = fmt.Sprintf("v%d", i)
	}
	for _, f := range []versiontest.Format{versiontest.SequenceFile, versiontest.Sparkey, versiontest.Parquet} {
		root := t.TempDir()
		w := versiontest.For(t)
		dir := w.Write(root, "db", "v1", versiontest.Options{Format: f, Files: 3, Sort: true, Sparkey: sparkey.WriterOptions{Compression: sparkey.Snappy}}, recs)
		if _, err := os.Stat(filepath.Join(dir, "_SUCCESS")); err != nil {
			t.Errorf("format %d: %v", f, err)
		}
		if left, _ := filepath.Glob(filepath.Join(root, "db", ".*")); len(left) != 0 {
			t.Errorf("format %d: left %v", f, left)
		}
		n := 0
		for p := 0; p < 3; p++ {
			got := readFile(t, f, filepath.Join(dir, versiontest.FileName(f, p)))
			for i, r := range got {
				if partitioner.Partition(r.Key, 3) != p || string(r.Value) != want[string(r.Key)] {
					t.Errorf("format %d file %d: %q=%q", f, p, r.Key, r.Value)
				}
				if i > 0 && string(got[i-1].Key) >= string(r.Key) {
					t.Errorf("format %d file %d: %q after %q", f, p, r.Key, got[i-1].Key)
				}
			}
			n += len(got)
		}
		if n != len(recs) {
			t.Errorf("format %d: %d records read, want %d", f, n, len(recs))
		}
	}
}

// TestRoundRobinInPlace deals records in order, in place, without a
// marker, and a second write over an existing version fails.
func TestRoundRobinInPlace(t *testing.T) {
	root := t.TempDir()
	recs := []versiontest.Record{{Key: []byte("c")}, {Key: []byte("a")}, {Key: []byte("b")}}
	out, err := versiontest.Write(root, "db", "v1", versiontest.Options{Files: 2, Layout: versiontest.RoundRobin, InPlace: true, NoSuccess: true}, recs)
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, versiontest.SequenceFile, out.Files[0]); len(got) != 2 || string(got[0].Key) != "c" || string(got[1].Key) != "b" {
		t.Errorf("file 0: %q", got)
	}
	if _, err := os.Stat(filepath.Join(out.Dir, "_SUCCESS")); !os.IsNotExist(err) {
		t.Errorf("_SUCCESS: %v", err)
	}
	if out.Bytes <= 0 {
		t.Errorf("Bytes %d", out.Bytes)
	}
	if _, err := versiontest.Write(root, "db", "v1", versiontest.Options{}, recs); err == nil {
		t.Error("a second write over v1 succeeded")
	}
}

// TestAmendFailsTheWrite: an Amend error leaves no version behind.
func TestAmendFailsTheWrite(t *testing.T) {
	root := t.TempDir()
	_, err := versiontest.Write(root, "db", "v1", versiontest.Options{Amend: func(string) error { return os.ErrInvalid }}, nil)
	if err == nil {
		t.Fatal("no error")
	}
	if left, _ := os.ReadDir(filepath.Join(root, "db")); len(left) != 0 {
		t.Errorf("left %v", left)
	}
}
