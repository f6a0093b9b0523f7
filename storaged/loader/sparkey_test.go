package loader

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/snappy"

	"spangle/shared/partitioner"
	"spangle/shared/seqfile"
	"spangle/shared/source"
	"spangle/shared/sparkey"
	"spangle/storaged/internal/testutil"
	"spangle/storaged/table"
)

func TestSparkeySequinsFiles(t *testing.T) {
	td := testutil.TestData(t)
	res, parts, err := load(t, filepath.Join(td, "sparkey", "sequins"), "sparkeydb", "1", nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 2 || res.Records != 4 {
		t.Fatalf("%d partitions, result %+v: want 2 partitions and 4 records", len(parts), res)
	}
	for k, v := range map[string]string{"Alice": "Practice", "Betty": "White", "Charlie": "Chaplin", "Dylan": "Thomas"} {
		if got, err := get(parts, []byte(k)); err != nil || string(got) != v {
			t.Errorf("%s = %q, %v; want %q", k, got, err, v)
		}
	}
}

func TestSparkeyLibsparkeyFiles(t *testing.T) {
	td := testutil.TestData(t)
	res, parts, err := load(t, filepath.Join(td, "sparkey", "libsparkey"), "users", "1", nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 4 || res.Records != 20000 || res.FastFiles != 4 {
		t.Fatalf("%d partitions, result %+v: want 4 partitions, 20000 records, all by the fast path", len(parts), res)
	}
	f, _ := os.Open(filepath.Join(td, "sparkey", "libsparkey", "users-1.expected.tsv"))
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), "\t")
		kb, _ := hex.DecodeString(k)
		vb, _ := hex.DecodeString(v)
		if got, err := get(parts, kb); err != nil || !bytes.Equal(got, vb) {
			t.Fatalf("%q = %x, %v; want %x", kb, got, err, vb)
		}
		n++
	}
	if n != 20000 {
		t.Fatalf("%d listed pairs", n)
	}
}

// TestSparkeyWrittenVersions loads versions of this package's writer in
// every compression, with unsorted logs (the general path), deletes, and
// two pairs sharing a partition.
func TestSparkeyWrittenVersions(t *testing.T) {
	recs := testutil.Records(3000, "v1")
	for _, comp := range []sparkey.Compression{sparkey.None, sparkey.Snappy, sparkey.Zstd} {
		t.Run(comp.String(), func(t *testing.T) {
			root := t.TempDir()
			testutil.WriteSparkeyVersion(t, root, "db", "v1", 5, sparkey.WriterOptions{Compression: comp}, recs)
			res, parts, err := load(t, root, "db", "v1", nil, Options{})
			if err != nil {
				t.Fatal(err)
			}
			// An uncompressed log is served in place, one in blocks
			// streamed into tables.
			fast, inPlace := 5, 0
			if comp == sparkey.None {
				fast, inPlace = 0, 5
			}
			if len(parts) != 5 || res.FastFiles != fast || res.InPlace != inPlace || res.Records != int64(len(recs)) {
				t.Fatalf("%d partitions, %+v: want %d fast, %d in place", len(parts), res, fast, inPlace)
			}
			for _, r := range recs {
				if v, err := get(parts, r.Key); err != nil || !bytes.Equal(v, r.Value) {
					t.Fatalf("%q = %q, %v", r.Key, v, err)
				}
			}
		})
	}
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("unsorted, deletes, shared partition, stream=%v", stream), func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "db", "v1")
			os.MkdirAll(dir, 0o755)
			var p0, p1 []testutil.Record
			for _, r := range recs {
				if partitioner.Partition(r.Key, 2) == 0 {
					p0 = append(p0, r)
				} else {
					p1 = append(p1, r)
				}
			}
			rand.New(rand.NewSource(3)).Shuffle(len(p1), func(i, j int) { p1[i], p1[j] = p1[j], p1[i] })
			half := len(p0) / 2
			testutil.WriteSparkeyPair(t, dir, "part-00000-00000", sparkey.WriterOptions{}, p0[:half])
			testutil.WriteSparkeyPair(t, dir, "part-00000-00001", sparkey.WriterOptions{Compression: sparkey.Snappy}, p0[half:])
			// Partition 1: unsorted, with the first key deleted and the second
			// overwritten.
			lf, _ := os.Create(filepath.Join(dir, "part-00001.spl"))
			xf, _ := os.Create(filepath.Join(dir, "part-00001.spi.sz"))
			w, _ := sparkey.NewWriter(lf, sparkey.WriterOptions{})
			for _, r := range p1 {
				w.Put(r.Key, r.Value)
			}
			w.Delete(p1[0].Key)
			w.Put(p1[1].Key, []byte("new"))
			if err := w.Close(xf); err != nil {
				t.Fatal(err)
			}
			lf.Close()
			xf.Close()
			opts := Options{SpillBytes: 16 << 10}
			// In place: the two uncompressed pairs, the unsorted one too; the
			// Snappy one streams. Streamed: the unsorted pair takes the
			// general path.
			fast, inPlace := 1, 2
			if stream {
				opts.Formats = []Format{SparkeyFormat{Stream: true}}
				fast, inPlace = 2, 0
			}
			res, parts, err := load(t, root, "db", "v1", nil, opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(parts) != 2 || res.FastFiles != fast || res.InPlace != inPlace || res.Records != int64(len(recs)-1) {
				t.Fatalf("%d partitions, %+v: want 2, %d fast pairs and %d in place, a deleted record", len(parts), res, fast, inPlace)
			}
			for i, r := range append(p0, p1...) {
				v, err := get(parts, r.Key)
				switch {
				case i == len(p0):
					if !errors.Is(err, table.ErrNotFound) {
						t.Fatalf("deleted %q = %q, %v", r.Key, v, err)
					}
				case i == len(p0)+1:
					if string(v) != "new" {
						t.Fatalf("overwritten %q = %q, %v", r.Key, v, err)
					}
				case err != nil || !bytes.Equal(v, r.Value):
					t.Fatalf("%q = %q, %v", r.Key, v, err)
				}
			}
		})
	}
}

func TestSparkeyHeldPartitionSkipsOtherFiles(t *testing.T) {
	root := t.TempDir()
	dir := testutil.WriteSparkeyVersion(t, root, "db", "v1", 3, sparkey.WriterOptions{}, testutil.Records(900, "v1"))
	// Another partition's log is garbage: it is never opened.
	os.WriteFile(filepath.Join(dir, "part-00002.spl"), []byte("not a log"), 0o644)
	res, parts, err := load(t, root, "db", "v1", []int{1}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if parts[1] == nil || parts[0] != nil || res.InPlace != 1 {
		t.Fatalf("%+v", res)
	}
}

// TestBadVersionsFail is the bad-input table for Sparkey versions: each
// fails the load with the file (and, for bad data, the offset) named.
func TestBadVersionsFail(t *testing.T) {
	recs := testutil.Records(500, "v1")
	for _, c := range []struct {
		name  string
		setup func(t *testing.T, dir string)
		is    error
		says  []string
	}{
		{"mixed formats", func(t *testing.T, dir string) {
			testutil.WriteFile(t, filepath.Join(dir, "part-00009"), seqfile.WriterOptions{}, recs[:3])
		}, ErrMixedFormats, []string{"part-00000.spi.sz is Sparkey", "part-00009 is SequenceFile"}},
		{"log without index", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "part-00001.spi.sz"))
		}, ErrBadLayout, []string{"part-00001.spl"}},
		{"index without log", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "part-00001.spl"))
		}, ErrBadLayout, []string{"part-00001.spi.sz"}},
		{"no partition in the name", func(t *testing.T, dir string) {
			os.Rename(filepath.Join(dir, "part-00001.spl"), filepath.Join(dir, "part.spl"))
			os.Rename(filepath.Join(dir, "part-00001.spi.sz"), filepath.Join(dir, "part.spi.sz"))
		}, ErrBadLayout, []string{"part.spl"}},
		{"key in the wrong partition", func(t *testing.T, dir string) {
			// Partition 1's pair renamed to partition 0's.
			for _, s := range []string{".spl", ".spi.sz"} {
				os.Rename(filepath.Join(dir, "part-00001"+s), filepath.Join(dir, "part-00000"+s))
			}
			testutil.WriteSparkeyPair(t, dir, "part-00001", sparkey.WriterOptions{}, nil)
		}, ErrWrongPartition, []string{"db/v1/part-00000.spl", "at byte"}},
		{"partition out of range", func(t *testing.T, dir string) {
			// Named partition 5 of a version whose greatest is 5: N = 6,
			// and its keys are not of partition 5 of 6.
			for _, s := range []string{".spl", ".spi.sz"} {
				os.Rename(filepath.Join(dir, "part-00001"+s), filepath.Join(dir, "part-00005"+s))
			}
		}, ErrWrongPartition, []string{"of 6, the file is of partition"}},
		{"truncated log", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "part-00002.spl")
			b, _ := os.ReadFile(p)
			os.WriteFile(p, b[:len(b)/2], 0o644)
		}, sparkey.ErrCorrupt, []string{"db/v1/part-00002.spl", "at byte"}},
		{"index of another log", func(t *testing.T, dir string) {
			b, _ := os.ReadFile(filepath.Join(dir, "part-00000.spi.sz"))
			os.WriteFile(filepath.Join(dir, "part-00002.spi.sz"), b, 0o644)
		}, sparkey.ErrCorrupt, []string{"db/v1/part-00002.spi.sz", "at byte"}},
		{"corrupt index framing", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "part-00002.spi.sz")
			b, _ := os.ReadFile(p)
			b[len(b)-3] ^= 0xff
			os.WriteFile(p, b, 0o644)
		}, sparkey.ErrCorrupt, []string{"db/v1/part-00002.spi.sz"}},
		{"index slot emptied", func(t *testing.T, dir string) {
			rewriteIndex(t, filepath.Join(dir, "part-00002.spi.sz"), func(ix []byte) {
				ss := int(ix[68]) + int(ix[72])
				for i := 112; i < len(ix); i += ss {
					if ix[i+ss-1]|ix[i+ss-2]|ix[i+ss-3]|ix[i+ss-4] != 0 {
						clear(ix[i : i+ss])
						return
					}
				}
			})
		}, sparkey.ErrCorrupt, []string{"db/v1/part-00002.spi.sz", "at byte"}},
	} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, stream=%v", c.name, stream), func(t *testing.T) {
				root := t.TempDir()
				dir := testutil.WriteSparkeyVersion(t, root, "db", "v1", 3, sparkey.WriterOptions{}, recs)
				c.setup(t, dir)
				src, files := testutil.OpenVersion(t, root, "db", "v1")
				_, err := Load(t.Context(), Request{Source: src, DB: "db", Version: "v1", Files: files,
					Dir: func(p int) string { return filepath.Join(t.TempDir(), "p") }},
					Options{Build: table.BuildOptions{NoSync: true}, Formats: []Format{SparkeyFormat{Stream: stream}, SequenceFileFormat{}}})
				if !errors.Is(err, c.is) {
					t.Fatalf("%v: want %v", err, c.is)
				}
				for _, s := range c.says {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("%v: does not say %q", err, s)
					}
				}
			})
		}
	}
}

// rewriteIndex decompresses a framed index, lets edit change it, and
// frames it again.
func rewriteIndex(t *testing.T, path string, edit func(ix []byte)) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := io.ReadAll(snappy.NewReader(bytes.NewReader(b)))
	if err != nil {
		t.Fatal(err)
	}
	edit(ix)
	var out bytes.Buffer
	w := snappy.NewBufferedWriter(&out)
	w.Write(ix)
	w.Close()
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSparkeyTwoPairsInPlace: two uncompressed pairs of one partition
// (key ranges apart) are both served in place, looked up in turn.
func TestSparkeyTwoPairsInPlace(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "db", "v1")
	os.MkdirAll(dir, 0o755)
	var p0 []testutil.Record
	for _, r := range testutil.Records(2000, "v1") {
		if partitioner.Partition(r.Key, 1) == 0 {
			p0 = append(p0, r)
		}
	}
	half := len(p0) / 2
	testutil.WriteSparkeyPair(t, dir, "part-00000-00000", sparkey.WriterOptions{}, p0[:half])
	testutil.WriteSparkeyPair(t, dir, "part-00000-00001", sparkey.WriterOptions{}, p0[half:])
	res, parts, err := load(t, root, "db", "v1", nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 1 || res.InPlace != 2 || res.Records != int64(len(p0)) {
		t.Fatalf("%d partitions, %+v: want one, two pairs in place", len(parts), res)
	}
	for _, r := range p0 {
		if v, err := get(parts, r.Key); err != nil || !bytes.Equal(v, r.Value) {
			t.Fatalf("%q = %q, %v", r.Key, v, err)
		}
	}
	if _, err := get(parts, []byte("absent")); !errors.Is(err, table.ErrNotFound) {
		t.Fatalf("absent key: %v", err)
	}
}

// TestSparkeyInPlaceSourceChanged: a log placed from the local source
// (copied in the kernel) that is shorter or longer than the listing said
// fails the load naming it, as does a cancelled load; nothing is served.
func TestSparkeyInPlaceSourceChanged(t *testing.T) {
	recs := testutil.Records(3000, "v1")
	for _, c := range []struct {
		name   string
		change func(t *testing.T, path string)
		cancel bool
	}{
		{"shorter", func(t *testing.T, p string) {
			b, _ := os.ReadFile(p)
			os.WriteFile(p, b[:len(b)-7], 0o644)
		}, false},
		{"longer", func(t *testing.T, p string) {
			f, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString("more")
			f.Close()
		}, false},
		{"cancelled", func(t *testing.T, p string) {}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			dir := testutil.WriteSparkeyVersion(t, root, "db", "v1", 2, sparkey.WriterOptions{}, recs)
			src, files := testutil.OpenVersion(t, root, "db", "v1")
			c.change(t, filepath.Join(dir, "part-00001.spl"))
			ctx, cancel := context.WithCancel(t.Context())
			if c.cancel {
				cancel()
			}
			defer cancel()
			_, err := Load(ctx, Request{Source: src, DB: "db", Version: "v1", Files: files,
				Dir: func(p int) string { return filepath.Join(t.TempDir(), "p") }},
				Options{Build: table.BuildOptions{NoSync: true}})
			switch {
			case c.cancel && !errors.Is(err, context.Canceled):
				t.Fatalf("%v: want context.Canceled", err)
			case !c.cancel && (err == nil || !strings.Contains(err.Error(), "db/v1/part-00001.spl")):
				t.Fatalf("%v: want an error naming db/v1/part-00001.spl", err)
			}
			t.Log(err)
		})
	}
}

// readOnly is a source whose files can only be read (as S3's): no copy
// in the kernel.
type readOnly struct{ source.Source }

func (r readOnly) Open(ctx context.Context, db, version, name string) (io.ReadCloser, error) {
	rc, err := r.Source.Open(ctx, db, version, name)
	return struct{ io.ReadCloser }{rc}, err
}

// TestSparkeyInPlaceReadOnlySource: logs from a source whose files can
// only be read are placed too (checked as they stream into the copy),
// and a key of the wrong partition still fails the load.
func TestSparkeyInPlaceReadOnlySource(t *testing.T) {
	recs := testutil.Records(3000, "v1")
	root := t.TempDir()
	dir := testutil.WriteSparkeyVersion(t, root, "db", "v1", 2, sparkey.WriterOptions{}, recs)
	src, files := testutil.OpenVersion(t, root, "db", "v1")
	res, err := Load(t.Context(), Request{Source: readOnly{src}, DB: "db", Version: "v1", Files: files,
		Dir: func(p int) string { return filepath.Join(t.TempDir(), fmt.Sprint(p)) }},
		Options{Build: table.BuildOptions{NoSync: true}})
	if err != nil || res.InPlace != 2 || res.Records != int64(len(recs)) {
		t.Fatalf("%+v, %v: want both pairs in place", res, err)
	}
	for _, s := range []string{".spl", ".spi.sz"} {
		os.Rename(filepath.Join(dir, "part-00001"+s), filepath.Join(dir, "part-00000"+s))
	}
	testutil.WriteSparkeyPair(t, dir, "part-00001", sparkey.WriterOptions{}, nil)
	src, files = testutil.OpenVersion(t, root, "db", "v1")
	_, err = Load(t.Context(), Request{Source: readOnly{src}, DB: "db", Version: "v1", Files: files,
		Dir: func(p int) string { return filepath.Join(t.TempDir(), fmt.Sprint(p)) }},
		Options{Build: table.BuildOptions{NoSync: true}})
	if !errors.Is(err, ErrWrongPartition) {
		t.Fatalf("%v: want ErrWrongPartition", err)
	}
}
