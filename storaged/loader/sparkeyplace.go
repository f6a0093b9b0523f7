package loader

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/klauspost/compress/snappy"

	"spangle/shared/badfile"
	"spangle/shared/source"
	"spangle/shared/sparkey"
	"spangle/storaged/table"
)

// placer is a Format that can serve some of its units in place rather
// than through tables.
type placer interface {
	// Place copies unit u (of the partition u.Partition, of n) into dir,
	// its partition's directory, and checks it, calling check with every
	// key and its offset; it returns the files written (to sync) and the
	// keys' count. When the unit is not one to place, it returns its
	// Records instead, to be read as Open's are.
	Place(ctx context.Context, u Unit, in Input, dir, base string, n int, check func(key []byte, off int64) error) (placed []string, keys int64, r Records, err error)
}

// Place implements placer: an uncompressed log is copied as it is, its
// index decompressed beside it, and both checked in place (see
// table.PlaceSparkeyPair), which a lookup then reads without tables; from
// the local source (source.FileCopier) the log is copied in the kernel
// and checked in the copy (table.PlaceSparkeyCopy). A
// log in blocks (or any log when f.Stream) is streamed into tables: its
// lookups would decompress a block each.
func (f SparkeyFormat) Place(ctx context.Context, u Unit, in Input, dir, base string, n int, check func(key []byte, off int64) error) ([]string, int64, Records, error) {
	logf, ixf := u.Files[0], u.Files[1]
	lg, err := in.Open(ctx, logf)
	if err != nil {
		return nil, 0, nil, err
	}
	var hdr [sparkey.LogHeaderSize]byte
	got, err := io.ReadFull(lg, hdr[:])
	le := binary.LittleEndian
	// Anything but a whole header of an uncompressed log is read the
	// usual way, which names what is wrong with it.
	if f.Stream || err != nil || le.Uint32(hdr[64:]) != uint32(sparkey.None) {
		r, err := f.open(ctx, u, in, readCloser{io.MultiReader(bytes.NewReader(hdr[:got]), lg), lg})
		return nil, 0, r, err
	}
	defer lg.Close()
	_, indexPath, _ := table.SparkeyPaths(dir, base)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, 0, nil, localErr(err)
	}
	// The index's slots: at most two per byte of the log's data (its
	// header checks the same), 16 bytes each.
	limit := int64(sparkey.IndexHeaderSize) + (2*logf.Size+1)*16
	if err := f.copyIndex(ctx, in, ixf, indexPath, limit); err != nil {
		return nil, 0, nil, err
	}
	var keys int64
	checkKey := func(key []byte, off int64) error {
		keys++
		if keys%recordBatch == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		return check(key, off)
	}
	var files []string
	if fc, ok := fileCopier(lg); ok {
		fill := func(f *os.File) error { return copyLog(ctx, in, logf, hdr[:], lg, fc, f) }
		files, err = table.PlaceSparkeyCopy(dir, base, u.Partition, n, logf.Size, fill, in.Path(logf), in.Path(ixf), checkKey)
	} else {
		files, err = table.PlaceSparkeyPair(dir, base, u.Partition, n, io.MultiReader(bytes.NewReader(hdr[:]), lg), logf.Size,
			in.Path(logf), in.Path(ixf), checkKey)
	}
	switch {
	case errors.Is(err, table.ErrSparkeyWrite):
		return nil, 0, nil, localErr(err)
	case err != nil:
		return nil, 0, nil, fmt.Errorf("loader: %w", err)
	}
	return files, keys, nil, nil
}

// fileCopier is r as a source.FileCopier when its source's file can be
// copied in the kernel (the local source's; a countingReader counts what
// it copies).
func fileCopier(r io.Reader) (source.FileCopier, bool) {
	inner := r
	if c, ok := r.(countingReader); ok {
		inner = c.ReadCloser
	}
	if _, ok := inner.(source.FileCopier); !ok {
		return nil, false
	}
	fc, ok := r.(source.FileCopier)
	return fc, ok
}

// copyChunk is how much copyLog copies between checks of its context.
const copyChunk = 4 << 20

// copyLog writes the log logf into f: hdr, already read from lg, then the
// rest of lg copied in the kernel (fc, in chunks of copyChunk, ctx checked
// between them), or read and written where the kernel cannot copy
// between the two files. The source must be exactly the listing's size.
func copyLog(ctx context.Context, in Input, logf source.File, hdr []byte, lg io.Reader, fc source.FileCopier, f *os.File) error {
	if _, err := f.Write(hdr); err != nil {
		return localErr(err)
	}
	left := logf.Size - int64(len(hdr))
	shorter := func() error {
		return badfile.New("sparkey", sparkey.ErrCorrupt, in.Path(logf), logf.Size-left, fmt.Sprintf("truncated: the listing said %d bytes", logf.Size), nil)
	}
	for left > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		got, err := fc.CopyTo(f, min(left, copyChunk))
		left -= got
		switch {
		case errors.Is(err, errors.ErrUnsupported):
		case err != nil:
			return fmt.Errorf("loader: copying %s: %w", in.Path(logf), err)
		case got == 0:
			return shorter()
		default:
			continue
		}
		break
	}
	if left > 0 { // read and write what the kernel did not copy
		src := &inputErr{r: lg}
		n, err := io.CopyN(f, src, left)
		left -= n
		var ie *srcErr
		switch {
		case errors.As(err, &ie):
			return fmt.Errorf("loader: reading %s: %w", in.Path(logf), ie.err)
		case err == io.EOF:
			return shorter()
		case err != nil:
			return localErr(err)
		}
	}
	// Nothing past the listing's size (and the source unchanged since it
	// was opened: its reader checks at its end).
	var b [1]byte
	switch n, err := lg.Read(b[:]); {
	case n > 0 || err == nil:
		return badfile.New("sparkey", sparkey.ErrCorrupt, in.Path(logf), logf.Size, "longer than the listing said", nil)
	case err != io.EOF:
		return fmt.Errorf("loader: reading %s: %w", in.Path(logf), err)
	}
	return nil
}

type readCloser struct {
	io.Reader
	io.Closer
}

// copyIndex decompresses the framed index ixf into path, at most limit
// bytes.
func (f SparkeyFormat) copyIndex(ctx context.Context, in Input, ixf source.File, path string, limit int64) error {
	ix, err := in.Open(ctx, ixf)
	if err != nil {
		return err
	}
	defer ix.Close()
	out, err := os.Create(path)
	if err != nil {
		return localErr(err)
	}
	src := &inputErr{r: ix}
	dec := snappy.NewReader(src)
	n, err := io.Copy(out, io.LimitReader(dec, limit+1))
	if cerr := out.Close(); err == nil && cerr != nil {
		err = localErr(cerr)
	}
	var ie *srcErr
	switch {
	case errors.As(err, &ie):
		return fmt.Errorf("loader: reading %s: %w", in.Path(ixf), ie.err)
	case err != nil && !errors.Is(err, ErrLocal) && src.err == nil:
		return badfile.New("sparkey", sparkey.ErrCorrupt, in.Path(ixf), n, "bad snappy framing (offset in the decompressed index)", err)
	case err != nil:
		return localErr(err)
	case n > limit:
		return badfile.New("sparkey", sparkey.ErrCorrupt, in.Path(ixf), limit, "index longer than its log allows", nil)
	}
	return nil
}

// inputErr marks the errors of the source (as opposed to those of what
// reads it, or writes what it read) as srcErr.
type inputErr struct {
	r   io.Reader
	err error
}

type srcErr struct{ err error }

func (e *srcErr) Error() string { return e.err.Error() }
func (e *srcErr) Unwrap() error { return e.err }

func (i *inputErr) Read(p []byte) (int, error) {
	n, err := i.r.Read(p)
	if err != nil && err != io.EOF {
		i.err = err
		err = &srcErr{err}
	}
	return n, err
}
