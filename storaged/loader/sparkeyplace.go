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
// table.PlaceSparkeyPair), which a lookup then reads without tables. A
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
	files, err := table.PlaceSparkeyPair(dir, base, u.Partition, n, io.MultiReader(bytes.NewReader(hdr[:]), lg), logf.Size,
		in.Path(logf), in.Path(ixf), func(key []byte, off int64) error {
			keys++
			if keys%recordBatch == 0 && ctx.Err() != nil {
				return ctx.Err()
			}
			return check(key, off)
		})
	switch {
	case errors.Is(err, table.ErrSparkeyWrite):
		return nil, 0, nil, localErr(err)
	case err != nil:
		return nil, 0, nil, fmt.Errorf("loader: %w", err)
	}
	return files, keys, nil, nil
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
