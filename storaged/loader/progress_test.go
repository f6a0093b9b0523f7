package loader

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"spangle/shared/seqfile"
	"spangle/shared/source"
	"spangle/shared/sparkey"
	"spangle/storaged/internal/testutil"
	"spangle/storaged/table"
)

// countRecords reads the records of files.
func countRecords(t *testing.T, src source.Source, files []source.File) int64 {
	t.Helper()
	var n int64
	for _, f := range files {
		rc, err := src.Open(context.Background(), "db", "v1", f.Name)
		if err != nil {
			t.Fatal(err)
		}
		r, err := seqfile.NewReader(rc, f.Name)
		if err != nil {
			t.Fatal(err)
		}
		for r.Next() {
			n++
		}
		rc.Close()
	}
	return n
}

// gatedSource is a real local root whose Open of one file waits until
// the test lets it go, so the test can look at a load half done.
type gatedSource struct {
	source.Source
	name   string
	opened chan struct{}
	gate   chan struct{}
}

func (g gatedSource) Open(ctx context.Context, db, version, name string) (io.ReadCloser, error) {
	if name == g.name {
		close(g.opened)
		select {
		case <-g.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return g.Source.Open(ctx, db, version, name)
}

func TestProgressCountsFilesBytesRecordsAndPaths(t *testing.T) {
	for _, c := range []struct {
		name                string
		layout              testutil.Layout
		presharded, spreads int64
	}{{"presharded", testutil.Sharded, 4, 0}, {"spread", testutil.RoundRobin, 0, 4}} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			testutil.WriteVersion(t, root, "db", "v1", 4, c.layout, seqfile.WriterOptions{}, testutil.Records(20000, "v1"))
			src, files := testutil.OpenVersion(t, root, "db", "v1")
			first3 := countRecords(t, src, files[:3])
			var total int64
			for _, f := range files {
				total += f.Size
			}
			g := gatedSource{Source: src, name: files[3].Name, opened: make(chan struct{}), gate: make(chan struct{})}
			prog := &Progress{}
			out := t.TempDir()
			done := make(chan error, 1)
			var res Result
			go func() {
				var err error
				res, err = Load(context.Background(), Request{Source: g, DB: "db", Version: "v1", Files: files, Progress: prog,
					Dir: func(p int) string { return filepath.Join(out, fmt.Sprint(p)) }},
					Options{Parallel: 1, Build: table.BuildOptions{NoSync: true}})
				done <- err
			}()
			<-g.opened // files 0-2 are read, file 3 waits
			s := prog.Snapshot(time.Now())
			if s.FilesTotal != 4 || s.FilesDone != 3 || s.BytesTotal != total {
				t.Fatalf("half way: %+v, want 3 of 4 files, %d bytes in all", s, total)
			}
			if s.BytesDone <= 0 || s.BytesDone >= total || s.Records != first3 || s.Started.IsZero() {
				t.Fatalf("half way: %+v, want %d records and part of %d bytes", s, first3, total)
			}
			close(g.gate)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			s = prog.Snapshot(time.Now())
			if s.FilesDone != 4 || s.BytesDone != total || s.Records != 20000 || res.Records != 20000 || res.Bytes != total {
				t.Fatalf("done: %+v, result %+v; want 4 files, %d bytes, 20000 records", s, res, total)
			}
			if s.Presharded != c.presharded || s.Spread != c.spreads {
				t.Fatalf("done: %d presharded and %d spread files, want %d and %d", s.Presharded, s.Spread, c.presharded, c.spreads)
			}
			if s.RecPerSec <= 0 || s.BytesPerSec <= 0 {
				t.Fatalf("done: no rate in %+v", s)
			}
		})
	}
}

// A Sparkey version counts a log with its index as one file of progress,
// and only those of held partitions: the others are not read.
func TestProgressSparkeyHeldPartition(t *testing.T) {
	root := t.TempDir()
	testutil.WriteSparkeyVersion(t, root, "db", "v1", 3, sparkey.WriterOptions{}, testutil.Records(900, "v1"))
	src, files := testutil.OpenVersion(t, root, "db", "v1")
	var want int64
	for _, f := range files {
		if strings.HasPrefix(f.Name, "part-00001.") {
			want += f.Size
		}
	}
	prog := &Progress{}
	out := t.TempDir()
	res, err := Load(context.Background(), Request{Source: src, DB: "db", Version: "v1", Files: files, Held: []int{1}, Progress: prog,
		Dir: func(p int) string { return filepath.Join(out, fmt.Sprint(p)) }}, Options{Build: table.BuildOptions{NoSync: true}})
	if err != nil {
		t.Fatal(err)
	}
	s := prog.Snapshot(time.Now())
	if want == 0 || s.FilesTotal != 1 || s.FilesDone != 1 || s.BytesTotal != want || s.BytesDone != want ||
		s.Records != res.Records || s.Presharded != 1 || s.Spread != 0 {
		t.Fatalf("progress %+v (result %+v), want 1 file of %d bytes, pre-sharded", s, res, want)
	}
}

// A Parquet file read in place is read a little more than once (its
// footer, the page headers checked first), yet a load's progress ends at
// all of its bytes, not past them.
func TestProgressParquetEndsAtTotal(t *testing.T) {
	root := t.TempDir()
	writeParquetVersion(t, root, "db", "v1", 2, 3000)
	src, files := testutil.OpenVersion(t, root, "db", "v1")
	var total int64
	for _, f := range files {
		total += f.Size
	}
	out := t.TempDir()
	prog := &Progress{}
	res, err := Load(context.Background(), Request{Source: src, DB: "db", Version: "v1", Files: files, Progress: prog,
		Dir: func(p int) string { return filepath.Join(out, fmt.Sprint(p)) }}, Options{Build: table.BuildOptions{NoSync: true}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Bytes < total {
		t.Fatalf("read %d bytes of %d", res.Bytes, total)
	}
	if s := prog.Snapshot(time.Now()); s.BytesDone != total || s.BytesTotal != total {
		t.Fatalf("progress %d of %d bytes; want %d of %d", s.BytesDone, s.BytesTotal, total, total)
	}
}
