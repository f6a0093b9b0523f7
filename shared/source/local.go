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
)

// local is a source root on a local file system. Every access goes through
// an os.Root, so a symlink or a name that leads outside the root fails
// instead of being followed.
type local struct {
	path string
	root *os.Root
	opts Options
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
	return &local{path: abs, root: r, opts: opts}, nil
}

func (l *local) String() string { return "file://" + l.path }

// readDir lists dir (a slash path relative to the root) and returns the
// entries for which keep is true.
func (l *local) readDir(ctx context.Context, dir string) ([]fs.DirEntry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := l.root.Open(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s", ErrNotFound, dir)
		}
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	defer f.Close()
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
	return l.subdirs(ctx, ".")
}

func (l *local) Versions(ctx context.Context, db string) ([]string, error) {
	if !ValidName(db) {
		return nil, fmt.Errorf("%w: bad db name %q", ErrNotFound, db)
	}
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
	return l.succeeded(db, version), nil
}

func (l *local) Files(ctx context.Context, db, version string) ([]File, error) {
	if !ValidName(db) || !ValidName(version) {
		return nil, fmt.Errorf("%w: bad name %q/%q", ErrNotFound, db, version)
	}
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
	f, err := l.root.Open(db + "/" + version + "/" + name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s/%s/%s", ErrNotFound, db, version, name)
		}
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return localFile{f: f}, nil
}

// localFile is a data file being read. A read error that is not the end
// of the file (EIO from a failing disk, ESTALE on NFS) is ErrUnavailable:
// the disk failed, not necessarily the data.
// Only Read, ReadAt and Close: an embedded *os.File would also offer WriteTo,
// which io.Copy prefers and which would bypass Read.
type localFile struct{ f *os.File }

// Close drops the file from the page cache (dropCached) and closes it.
func (f localFile) Close() error {
	dropCached(f.f)
	return f.f.Close()
}

func (f localFile) Read(p []byte) (int, error) {
	n, err := f.f.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return n, err
}

// ReadAt lets a format that needs random access (Parquet reads its
// footer first) read a local file in place; errors are as Read's.
func (f localFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.f.ReadAt(p, off)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return n, err
}

func joinRel(dir, name string) string {
	if dir == "." {
		return name
	}
	return dir + "/" + name
}

// Marker reads <root>/<db>/<name>; a missing file is no marker.
func (l *local) Marker(ctx context.Context, db, name string) ([]byte, error) {
	return readMarker(ctx, db, name, func(ctx context.Context) (io.ReadCloser, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		f, err := l.root.Open(db + "/" + name)
		if err != nil {
			return nil, err
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, err
		}
		if !fi.Mode().IsRegular() {
			f.Close()
			return nil, fmt.Errorf("not a regular file (%v)", fi.Mode().Type())
		}
		return f, nil
	})
}

func (l *local) Pin(ctx context.Context, db string) (string, error) {
	return readPin(ctx, db, func(ctx context.Context) (io.ReadCloser, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		f, err := l.root.Open(db + "/" + PinFile)
		if err != nil {
			return nil, err
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, err
		}
		if !fi.Mode().IsRegular() {
			f.Close()
			return nil, fmt.Errorf("%w: not a regular file (%v)", ErrBadPin, fi.Mode().Type())
		}
		return f, nil
	})
}
