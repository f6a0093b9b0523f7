package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
	"time"
)

// local is a source root on a local file system. Every access goes through
// an os.Root, so a symlink or a name that leads outside the root fails
// instead of being followed.
//
// Nothing it does can block for good. A file is checked to be a regular
// file before it is opened and opened with O_NONBLOCK, so that a FIFO or
// a device put in the root (a marker or a data file) never blocks the
// open, and the opened file is checked again (fstat), so that one
// swapped in between is refused too. Every operation runs under
// Options.LocalTimeout and the caller's context (bounded): a system call
// that hangs (a dead NFS server) costs a goroutine, not the scan or the
// shutdown waiting on it.
type local struct {
	path string
	root *os.Root
	opts Options
	// atBufs holds the ReadAt buffers (of maxRead bytes) of closed
	// files for the next: a load reads a version's files one after
	// another, and a buffer made afresh for each was the most a Parquet
	// load allocated after its decoders.
	atBufs sync.Pool
}

func openLocal(path string, opts Options) (*local, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %v", ErrBadRoot, path, err)
	}
	r, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadRoot, err)
	}
	if opts.LocalTimeout <= 0 {
		opts.LocalTimeout = DefaultLocalTimeout
	}
	return &local{path: abs, root: r, opts: opts}, nil
}

// bounded runs op in a goroutine of its own and waits for it, for ctx, or
// for d, whichever comes first. ok is false when op was given up on:
// then op goes on alone, and discard, if not nil, gets its result when it
// ends (to close a file nobody will read).
func bounded[T any](ctx context.Context, d time.Duration, what string, op func() (T, error), discard func(T)) (v T, err error, ok bool) {
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := op()
		ch <- result{v, err}
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case r := <-ch:
		return r.v, r.err, true
	case <-ctx.Done():
		err = fmt.Errorf("source: %s: %w", what, ctx.Err())
	case <-t.C:
		err = fmt.Errorf("%w: %s: no answer from the file system within %v", ErrUnavailable, what, d)
	}
	if discard != nil {
		go func() {
			if r := <-ch; r.err == nil {
				discard(r.v)
			}
		}()
	}
	return v, err, false
}

// within is bounded for an operation that holds nothing when given up on.
func within[T any](ctx context.Context, d time.Duration, what string, op func() (T, error)) (T, error) {
	v, err, _ := bounded(ctx, d, what, op, nil)
	return v, err
}

// openRegular opens name (relative to the root) for reading, only if it
// is a regular file of at most max bytes (max < 0: any size), without
// ever blocking in open: the name is checked first, opened with
// O_NONBLOCK (a FIFO or a device opens at once instead of waiting for a
// writer), and the opened file checked again. notRegular wraps the error
// of anything else. It returns the file and its size.
func (l *local) openRegular(ctx context.Context, name string, max int64, notRegular error) (*os.File, int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	check := func(fi fs.FileInfo) error {
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("%w: %s: not a regular file (%v)", notRegular, name, fi.Mode().Type())
		}
		if max >= 0 && fi.Size() > max {
			return fmt.Errorf("%w: %s: %d bytes, more than %d", notRegular, name, fi.Size(), max)
		}
		return nil
	}
	type opened struct {
		f    *os.File
		size int64
	}
	o, err, _ := bounded(ctx, l.opts.LocalTimeout, "opening "+name, func() (opened, error) {
		fi, err := l.root.Stat(name)
		if err != nil {
			return opened{}, err
		}
		if err := check(fi); err != nil {
			return opened{}, err
		}
		f, err := l.root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			return opened{}, err
		}
		fi, err = f.Stat()
		if err == nil {
			err = check(fi)
		}
		if err != nil {
			f.Close()
			return opened{}, err
		}
		return opened{f, fi.Size()}, nil
	}, func(o opened) { o.f.Close() })
	return o.f, o.size, err
}

func (l *local) String() string { return "file://" + l.path }

// readDir lists dir (a slash path relative to the root) and returns the
// entries for which keep is true.
func (l *local) readDir(ctx context.Context, dir string) ([]fs.DirEntry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// O_NONBLOCK: a FIFO swapped in for the directory opens at once
	// and fails the check below instead of blocking.
	f, err := l.root.OpenFile(dir, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s", ErrNotFound, dir)
		}
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && !fi.IsDir() {
		return nil, fmt.Errorf("%w: %s is not a directory", ErrNotFound, dir)
	}
	ents, err := f.ReadDir(-1)
	if err != nil {
		return nil, fmt.Errorf("%w: listing %s: %w", ErrUnavailable, dir, err)
	}
	return ents, nil
}

// subdirs returns the valid names in dir that are directories, following
// symlinks only as far as they stay inside the root.
func (l *local) subdirs(ctx context.Context, dir string) ([]string, error) {
	ents, err := l.readDir(ctx, dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		if !ValidName(e.Name()) {
			continue
		}
		fi, err := l.root.Stat(joinRel(dir, e.Name()))
		if err != nil || !fi.IsDir() {
			continue // dangling, escaping or not a directory
		}
		names = append(names, e.Name())
	}
	return sortedValid(names), nil
}

func (l *local) DBs(ctx context.Context) ([]string, error) {
	return within(ctx, l.opts.LocalTimeout, "listing the root", func() ([]string, error) { return l.subdirs(ctx, ".") })
}

func (l *local) Versions(ctx context.Context, db string) ([]string, error) {
	if !ValidName(db) {
		return nil, fmt.Errorf("%w: bad db name %q", ErrNotFound, db)
	}
	return within(ctx, l.opts.LocalTimeout, "listing "+db, func() ([]string, error) { return l.versions(ctx, db) })
}

func (l *local) versions(ctx context.Context, db string) ([]string, error) {
	vs, err := l.subdirs(ctx, db)
	if err != nil || !l.opts.RequireSuccess {
		return vs, err
	}
	out := vs[:0]
	for _, v := range vs {
		if l.succeeded(db, v) {
			out = append(out, v)
		}
	}
	return out, nil
}

func (l *local) succeeded(db, version string) bool {
	fi, err := l.root.Stat(db + "/" + version + "/" + SuccessFile)
	return err == nil && fi.Mode().IsRegular()
}

func (l *local) Succeeded(ctx context.Context, db, version string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if !ValidName(db) || !ValidName(version) {
		return false, fmt.Errorf("%w: bad name %q/%q", ErrNotFound, db, version)
	}
	return within(ctx, l.opts.LocalTimeout, "checking "+db+"/"+version+"/"+SuccessFile, func() (bool, error) {
		return l.succeeded(db, version), nil
	})
}

func (l *local) Files(ctx context.Context, db, version string) ([]File, error) {
	if !ValidName(db) || !ValidName(version) {
		return nil, fmt.Errorf("%w: bad name %q/%q", ErrNotFound, db, version)
	}
	return within(ctx, l.opts.LocalTimeout, "listing "+db+"/"+version, func() ([]File, error) { return l.files(ctx, db, version) })
}

func (l *local) files(ctx context.Context, db, version string) ([]File, error) {
	dir := db + "/" + version
	ents, err := l.readDir(ctx, dir)
	if err != nil {
		return nil, err
	}
	var files []File
	for _, e := range ents {
		if Hidden(e.Name()) {
			continue
		}
		fi, err := l.root.Stat(dir + "/" + e.Name())
		switch {
		case err != nil:
			return nil, fmt.Errorf("%w: %s/%s: %v", ErrUnreadable, dir, e.Name(), err)
		case fi.IsDir():
			continue
		case !fi.Mode().IsRegular():
			return nil, fmt.Errorf("%w: %s/%s: not a regular file (%v)", ErrUnreadable, dir, e.Name(), fi.Mode().Type())
		}
		files = append(files, File{Name: e.Name(), Size: fi.Size(), ModTime: fi.ModTime().UTC()})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
	return files, nil
}

func (l *local) Open(ctx context.Context, db, version, name string) (io.ReadCloser, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if !ValidName(db) || !ValidName(version) || Hidden(name) || name == "" || filepath.Base(name) != name {
		return nil, fmt.Errorf("%w: bad file %q/%q/%q", ErrNotFound, db, version, name)
	}
	path := db + "/" + version + "/" + name
	f, size, err := l.openRegular(ctx, path, -1, ErrUnreadable)
	switch {
	case err == nil:
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%w: %s", ErrNotFound, path)
	case errors.Is(err, ErrUnreadable), errors.Is(err, ErrUnavailable), ctx.Err() != nil:
		return nil, err
	default:
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return &localFile{ctx: ctx, f: f, path: path, size: size, left: size, timeout: l.opts.LocalTimeout, atBufs: &l.atBufs}, nil
}

// localFile is a data file being read. It reads exactly the size the
// file had when it was opened: a file that grows or shrinks meanwhile
// fails with ErrChanged, as an S3 object that changes mid-read does. A
// read error that is not the end of the file (EIO from a failing disk,
// ESTALE on NFS) is ErrUnavailable: the disk failed, not necessarily the
// data. Each read is bounded (see local): it lands in the file's own
// buffer and is copied out, so a read given up on never writes into the
// caller's memory later; the file fails from then on.
// Only Read and Close: an embedded *os.File would also offer WriteTo,
// which io.Copy prefers and which would bypass Read.
type localFile struct {
	ctx     context.Context
	f       *os.File
	path    string
	size    int64 // when opened
	left    int64 // of size, not read yet
	timeout time.Duration
	buf     []byte // where reads land; dropped with a read given up on
	err     error  // once a read was given up on
	copied  bool   // CopyTo has copied some of it

	// ReadAt's own, apart from Read's: atMu serializes its calls.
	atMu   sync.Mutex
	atBuf  []byte     // where ReadAt's reads land; dropped with a read given up on
	atErr  error      // once a ReadAt was given up on
	atBufs *sync.Pool // the source's spare atBufs
}

// maxRead bounds one read (and the file's buffer).
const maxRead = 1 << 20

// Close drops the file from the page cache (dropCached) and closes it,
// without waiting past the timeout.
func (f *localFile) Close() error {
	f.atMu.Lock()
	if f.atBuf != nil && f.atBufs != nil {
		// No read is under way in it: one given up on took it along.
		b := f.atBuf
		f.atBuf = nil
		f.atBufs.Put(&b)
	}
	f.atMu.Unlock()
	_, err := within(context.Background(), f.timeout, "closing "+f.path, func() (struct{}, error) {
		dropCached(f.f)
		return struct{}{}, f.f.Close()
	})
	return err
}

func (f *localFile) Read(p []byte) (int, error) {
	if f.err != nil {
		return 0, f.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if f.left == 0 {
		return 0, f.atEnd()
	}
	n := int(min(int64(len(p)), f.left, maxRead))
	if cap(f.buf) < n {
		f.buf = make([]byte, n)
	}
	buf := f.buf[:n]
	got, err, ok := bounded(f.ctx, f.timeout, "reading "+f.path, func() (int, error) { return f.f.Read(buf) }, nil)
	if !ok {
		f.buf, f.err = nil, err
		return 0, err
	}
	copy(p, buf[:got])
	f.left -= int64(got)
	switch {
	case err == io.EOF && f.left > 0:
		return got, fmt.Errorf("%w: %s: %d bytes shorter than when it was opened", ErrChanged, f.path, f.left)
	case err == io.EOF:
		return got, f.atEnd()
	case err != nil:
		return got, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return got, nil
}

// chunkSize is how much of a file one Chunk reads: what the SequenceFile
// reader used to ask of Read, which keeps the chunk in the CPU's cache
// while it is decoded (1 MiB reads cost a load more CPU, not less).
const chunkSize = 64 << 10

// Chunk reads the file's next bytes into its own buffer and returns them,
// valid until the next call (seqfile.Chunker): a reader that decodes
// them in place saves the copy Read makes out of that buffer. At the end
// it returns io.EOF (ErrChanged if the file grew); errors are Read's. A
// read given up on drops the buffer, as Read does, and with it nothing
// the caller may still use: the chunk before it is invalid once Chunk is
// called.
func (f *localFile) Chunk() ([]byte, error) {
	if f.err != nil {
		return nil, f.err
	}
	if f.left == 0 {
		return nil, f.atEnd()
	}
	n := int(min(f.left, chunkSize))
	if cap(f.buf) < n {
		f.buf = make([]byte, chunkSize)
	}
	buf := f.buf[:n]
	got, err, ok := bounded(f.ctx, f.timeout, "reading "+f.path, func() (int, error) { return f.f.Read(buf) }, nil)
	if !ok {
		f.buf, f.err = nil, err
		return nil, err
	}
	f.left -= int64(got)
	switch {
	case err == io.EOF && f.left > 0:
		return buf[:got], fmt.Errorf("%w: %s: %d bytes shorter than when it was opened", ErrChanged, f.path, f.left)
	case err == io.EOF && got == 0:
		return nil, f.atEnd()
	case err != nil && err != io.EOF:
		return buf[:got], fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return buf[:got], nil
}

// ReadAt reads len(p) bytes of the file at off (io.ReaderAt), of the
// file as it was when opened: past that size it reads what there is and
// returns io.EOF, and a file that has become shorter fails with
// ErrChanged. A reader that needs random access (Parquet's footer is at
// the end) reads the file in place through it instead of copying it
// first. Each read is bounded as Read's are and lands in a buffer of the
// file's own (at most maxRead at a time) that is copied to p, so a read
// given up on never writes into p later; ReadAt fails from then on.
// Calls may be made in parallel (they are serialized), but not with Read,
// Chunk or CopyTo.
func (f *localFile) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("source: %s: reading at offset %d", f.path, off)
	}
	f.atMu.Lock()
	defer f.atMu.Unlock()
	if f.atErr != nil {
		return 0, f.atErr
	}
	if len(p) == 0 {
		return 0, nil
	}
	if off >= f.size {
		return 0, io.EOF
	}
	want := int(min(int64(len(p)), f.size-off))
	done := 0
	for done < want {
		n := min(want-done, maxRead)
		if f.atBuf == nil {
			f.atBuf = f.spareAtBuf()
		}
		buf, at := f.atBuf[:n], off+int64(done)
		got, err, ok := bounded(f.ctx, f.timeout, "reading "+f.path, func() (int, error) { return f.f.ReadAt(buf, at) }, nil)
		if !ok {
			f.atBuf, f.atErr = nil, err
			return done, err
		}
		done += copy(p[done:], buf[:got])
		switch {
		case got < n && (err == nil || err == io.EOF):
			return done, fmt.Errorf("%w: %s: %d bytes, shorter than the %d when it was opened", ErrChanged, f.path, at+int64(got), f.size)
		case err != nil && err != io.EOF:
			return done, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
	}
	if done < len(p) {
		return done, io.EOF
	}
	return done, nil
}

// spareAtBuf is a ReadAt buffer of maxRead bytes: a closed file's, or new.
func (f *localFile) spareAtBuf() []byte {
	if f.atBufs != nil {
		if b, ok := f.atBufs.Get().(*[]byte); ok && len(*b) == maxRead {
			return *b
		}
	}
	return make([]byte, maxRead)
}

// Size is the file's size when it was opened: what ReadAt reads.
func (f *localFile) Size() int64 { return f.size }

// atEnd is the error once the size seen at open has been read: io.EOF,
// or ErrChanged when the file has grown since.
func (f *localFile) atEnd() error {
	fi, err := within(f.ctx, f.timeout, "checking "+f.path, f.f.Stat)
	switch {
	case err != nil:
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	case fi.Size() != f.size:
		return fmt.Errorf("%w: %s: %d bytes, %d when it was opened", ErrChanged, f.path, fi.Size(), f.size)
	}
	return io.EOF
}

func joinRel(dir, name string) string {
	if dir == "." {
		return name
	}
	return dir + "/" + name
}

// errBadMarker marks a marker file that is not a regular file or is too
// large; Marker reports it as an error of the marker.
var errBadMarker = errors.New("source: bad marker file")

// Marker reads <root>/<db>/<name>; a missing file is no marker.
func (l *local) Marker(ctx context.Context, db, name string) ([]byte, error) {
	return readMarker(ctx, db, name, func(ctx context.Context) (io.ReadCloser, error) {
		path := db + "/" + name
		f, size, err := l.openRegular(ctx, path, MaxMarkerSize, errBadMarker)
		if err != nil {
			return nil, err
		}
		return &localFile{ctx: ctx, f: f, path: path, size: size, left: size, timeout: l.opts.LocalTimeout}, nil
	})
}

func (l *local) Pin(ctx context.Context, db string) (string, error) {
	return readPin(ctx, db, func(ctx context.Context) (io.ReadCloser, error) {
		// A marker is a few bytes: a larger file is not one.
		f, size, err := l.openRegular(ctx, db+"/"+PinFile, MaxPinSize, ErrBadPin)
		if err != nil {
			return nil, err
		}
		return &localFile{ctx: ctx, f: f, path: db + "/" + PinFile, size: size, left: size, timeout: l.opts.LocalTimeout}, nil
	})
}

// FileCopier is implemented by the readers of the local source's data
// files, to copy a file into another in the kernel rather than through
// Read.
type FileCopier interface {
	// CopyTo copies up to n of the file's next bytes (of the size it had
	// when opened) to dst at its offset and returns how many it copied,
	// fewer only with an error: ErrChanged when the file is shorter than
	// when it was opened, errors.ErrUnsupported when the kernel cannot
	// copy between the two files (then both files' offsets are past what
	// was copied, and Read and dst's Write go on from there). One call is bounded as a read is
	// (Options.LocalTimeout, the context Open was given); callers copy a
	// few MiB a call, to check their own context between calls.
	CopyTo(dst *os.File, n int64) (int64, error)
}

func (f *localFile) CopyTo(dst *os.File, n int64) (int64, error) {
	if f.err != nil {
		return 0, f.err
	}
	n = min(n, f.left)
	var done int64
	for done < n {
		got, err, ok := bounded(f.ctx, f.timeout, "copying "+f.path, func() (int, error) {
			return copyRange(f.f, dst, int(min(n-done, 1<<30)))
		}, nil)
		switch {
		case !ok:
			f.err = err
			return done, err
		case errors.Is(err, errors.ErrUnsupported):
			return done, err
		case err != nil:
			return done, fmt.Errorf("%w: %w", ErrUnavailable, err)
		case got == 0 && !f.copied:
			// Some file systems copy nothing rather than fail.
			return 0, fmt.Errorf("%w: copy_file_range copied nothing", errors.ErrUnsupported)
		case got == 0:
			return done, fmt.Errorf("%w: %s: %d bytes shorter than when it was opened", ErrChanged, f.path, f.left)
		}
		done += int64(got)
		f.left -= int64(got)
		f.copied = true
	}
	return done, nil
}
