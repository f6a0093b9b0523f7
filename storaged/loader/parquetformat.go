package loader

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"spangle/shared/parquetkv"
	"spangle/shared/source"
)

// parquetSuffix names Parquet data files, as Spark writes them
// (part-00000-<uuid>-c000.snappy.parquet).
const parquetSuffix = ".parquet"

// ParquetFormat reads Parquet files: one row per key, the columns mapped
// as Spec (the db's _FORMAT, or parquetkv.DefaultFormat) says. N is
// Spec.Partitions when set, else the number of data files, and keys go to
// their partitions whatever file holds them, as for SequenceFiles that
// are not pre-sharded. A key in two rows is resolved as Spec.Duplicates
// says, rows ordered by file name, then by row.
type ParquetFormat struct {
	// Spec maps columns to keys and values.
	Spec parquetkv.Format
	// TempDir holds the local copy of a file that the source cannot read
	// in place (an S3 object); default os.TempDir().
	TempDir string
}

// Name implements Format.
func (ParquetFormat) Name() string { return "Parquet" }

// Claims implements Format.
func (ParquetFormat) Claims(name string) bool { return strings.HasSuffix(name, parquetSuffix) }

// Layout implements Format: one unit per file, in name order.
func (p ParquetFormat) Layout(files []source.File) (Layout, error) {
	files = slices.SortedFunc(slices.Values(files), func(a, b source.File) int { return strings.Compare(a.Name, b.Name) })
	l := Layout{Partitions: len(files), Units: make([]Unit, len(files))}
	if p.Spec.Partitions > 0 {
		l.Partitions = p.Spec.Partitions
	}
	for i, f := range files {
		l.Units[i] = Unit{Files: []source.File{f}, Partition: -1}
	}
	switch p.Spec.Duplicates {
	case parquetkv.DuplicatesFirst:
		l.Duplicates = DuplicatesFirst
	case parquetkv.DuplicatesLast:
		l.Duplicates = DuplicatesLast
	default:
		l.Duplicates = DuplicatesError
	}
	// A value column with no content_type is served as the node's
	// setting says; JSON and a set content_type are the db's own.
	if p.Spec.JSON() || p.Spec.ContentType != "" {
		l.ContentType = p.Spec.ValueContentType()
	}
	return l, nil
}

// Open implements Format. Parquet is read from its end (the footer) and
// by column chunk, so it needs random access: a file whose source offers
// it (the local source's, see randomAccess) is read in place; any other
// (an S3 object's reader is sequential) is first copied in one
// sequential read to a temporary file, which is removed on Close.
func (p ParquetFormat) Open(ctx context.Context, u Unit, in Input) (Records, error) {
	f := u.Files[0]
	rc, err := in.Open(ctx, f)
	if err != nil {
		return nil, err
	}
	name := in.Path(f)
	ra, size, ok := randomAccess(rc)
	closer := io.Closer(rc)
	if !ok {
		tmp, n, err := spool(rc, p.TempDir)
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("loader: copying %s to local disk: %w", name, err)
		}
		ra, closer, size = tmp, tmp, n
	}
	r, err := parquetkv.NewReader(ra, size, name, p.Spec, parquetkv.Options{})
	if err != nil {
		closer.Close()
		return nil, fmt.Errorf("loader: %w", err)
	}
	return &parquetRecords{Reader: r, closer: closer}, nil
}

// randomAccess is rc as an io.ReaderAt, and the size it reads, when its
// source's file offers random access (io.ReaderAt and the Size it had
// when opened: the local source's, whose reads are bounded as its
// sequential reads are). rc may be Input.Open's countingReader, which
// then counts what is read through it. Reading in place saves a copy of
// the file into the page cache and the read of it back: for a load of
// 48 MB of Parquet, 48 MB of fresh pages written and removed again.
func randomAccess(rc io.ReadCloser) (io.ReaderAt, int64, bool) {
	inner := rc
	if w, ok := rc.(interface{ unwrap() io.ReadCloser }); ok {
		inner = w.unwrap()
	}
	if _, ok := inner.(io.ReaderAt); !ok {
		return nil, 0, false
	}
	sz, ok := inner.(interface{ Size() int64 })
	if !ok {
		return nil, 0, false
	}
	ra, ok := rc.(io.ReaderAt)
	return ra, sz.Size(), ok
}

// spool copies r to a temporary file that is removed when closed.
func spool(r io.Reader, dir string) (*tempFile, int64, error) {
	f, err := os.CreateTemp(dir, "spangle-parquet-*")
	if err != nil {
		return nil, 0, localErr(err)
	}
	t := &tempFile{f}
	n, err := io.Copy(f, r)
	if err != nil {
		t.Close()
		return nil, 0, err
	}
	return t, n, nil
}

type tempFile struct{ *os.File }

func (t *tempFile) Close() error {
	return errors.Join(t.File.Close(), os.Remove(t.Name()))
}

type parquetRecords struct {
	*parquetkv.Reader
	closer io.Closer
	row    int64
}

func (r *parquetRecords) Next() bool {
	if !r.Reader.Next() {
		return false
	}
	r.row++
	return true
}

// Offset implements Records: for Parquet, the row number from 1.
func (r *parquetRecords) Offset() int64 { return r.row }

func (r *parquetRecords) Close() error {
	return errors.Join(r.Reader.Close(), r.closer.Close())
}
