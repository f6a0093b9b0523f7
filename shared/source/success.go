package source

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"
)

// MaxSuccessSize bounds how much of a _SUCCESS marker is read. The JSON
// manifest Hadoop's S3A and manifest committers write is a few tens of
// kilobytes (its metrics and I/O statistics dominate; the committers cap
// the file list); a marker larger than this is not one, and is an error
// rather than a reason to allocate without bound.
const MaxSuccessSize = 4 << 20

// ErrBadSuccess wraps the error of a _SUCCESS marker that reads as a JSON
// manifest but cannot be used: malformed, larger than MaxSuccessSize,
// saying the job did not succeed, or listing a name that is no file of
// the version. The version is not loaded while it stays so; what is
// served stays.
var ErrBadSuccess = errors.New("source: bad _SUCCESS manifest")

// SuccessManifest is what a _SUCCESS marker says about its version.
type SuccessManifest struct {
	// Listed is true when the marker is a JSON manifest that lists the
	// job's files (the filenames of Hadoop's committers); false for the
	// plain, empty marker, which only says the job finished.
	Listed bool
	// Files are the base names of the files listed, sorted, without
	// duplicates. Hidden names (_logs, .crc) are left out: they are
	// never data files.
	Files []string
	// Committer names the committer that wrote it, for logs.
	Committer string
}

// successJSON is the part of a committer's _SUCCESS manifest that spangle
// reads: "filenames" lists the files the job committed, as paths or URIs
// ("/bucket/prefix/db/v1/part-00000", "s3a://bucket/prefix/db/v1/part-00000");
// "success", when present and false, says the job failed. The other
// fields ("name", "committer", "hostname", "metrics", "diagnostics",
// "iostatistics" and more) are ignored. The format gives no file sizes,
// so a listed file counts once it is present.
type successJSON struct {
	Filenames *[]string `json:"filenames"`
	Success   *bool     `json:"success"`
	Committer string    `json:"committer"`
}

// ParseSuccess reads the content of a _SUCCESS marker. Content that is
// empty or only white space is the plain marker: the job finished, with
// no list (SuccessManifest.Listed false). Content that starts with '{' is
// a JSON manifest and must parse: a JSON object whose "filenames", if
// present, is a list of strings each naming a file (its last path
// element); anything else wraps ErrBadSuccess. Other content (a word
// some tool writes) is taken as the plain marker, as sequins took any
// _SUCCESS.
func ParseSuccess(data []byte) (SuccessManifest, error) {
	if len(data) > MaxSuccessSize {
		return SuccessManifest{}, fmt.Errorf("%w: more than %d bytes", ErrBadSuccess, MaxSuccessSize)
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return SuccessManifest{}, nil
	}
	var j successJSON
	if err := json.Unmarshal(trimmed, &j); err != nil {
		return SuccessManifest{}, fmt.Errorf("%w: not valid JSON: %v", ErrBadSuccess, err)
	}
	if j.Success != nil && !*j.Success {
		return SuccessManifest{}, fmt.Errorf("%w: it says the job did not succeed (\"success\": false)", ErrBadSuccess)
	}
	m := SuccessManifest{Committer: truncate(j.Committer, 64)}
	if j.Filenames == nil {
		return m, nil // a JSON marker without a list says no more than an empty one
	}
	m.Listed = true
	seen := make(map[string]bool, len(*j.Filenames))
	for _, f := range *j.Filenames {
		name := path.Base(strings.TrimRight(f, "/"))
		if f == "" || name == "." || name == "/" {
			return SuccessManifest{}, fmt.Errorf("%w: %q in filenames names no file", ErrBadSuccess, truncate(f, 128))
		}
		if Hidden(name) || seen[name] {
			continue
		}
		seen[name] = true
		m.Files = append(m.Files, name)
	}
	sort.Strings(m.Files)
	return m, nil
}

// Missing returns the listed files that files (a version's data files)
// do not hold, in order; none when the manifest lists nothing.
func (m SuccessManifest) Missing(files []File) []string {
	have := make(map[string]bool, len(files))
	for _, f := range files {
		have[f.Name] = true
	}
	var out []string
	for _, name := range m.Files {
		if !have[name] {
			out = append(out, name)
		}
	}
	return out
}

// readSuccess is the shared half of every Source's ReadSuccess: it reads
// at most MaxSuccessSize+1 bytes of the marker through open and parses
// them. No marker is an error wrapping ErrNotFound.
func readSuccess(ctx context.Context, db, version string, open func(ctx context.Context) (io.ReadCloser, error)) (SuccessManifest, error) {
	if !ValidName(db) || !ValidName(version) {
		return SuccessManifest{}, fmt.Errorf("%w: bad name %q/%q", ErrNotFound, db, version)
	}
	where := db + "/" + version + "/" + SuccessFile
	rc, err := open(ctx)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, ErrNotFound):
		return SuccessManifest{}, fmt.Errorf("%w: %s", ErrNotFound, where)
	case err != nil:
		return SuccessManifest{}, fmt.Errorf("source: reading %s: %w", where, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, MaxSuccessSize+1))
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, ErrNotFound):
		return SuccessManifest{}, fmt.Errorf("%w: %s", ErrNotFound, where)
	case err != nil:
		return SuccessManifest{}, fmt.Errorf("source: reading %s: %w", where, err)
	}
	m, err := ParseSuccess(data)
	if err != nil {
		return SuccessManifest{}, fmt.Errorf("source: %s: %w", where, err)
	}
	return m, nil
}

// ReadSuccess reads db/version/_SUCCESS through the root: only a regular
// file of at most MaxSuccessSize bytes, opened without blocking (a FIFO
// would block the read), as the other markers are.
func (l *local) ReadSuccess(ctx context.Context, db, version string) (SuccessManifest, error) {
	return readSuccess(ctx, db, version, func(ctx context.Context) (io.ReadCloser, error) {
		name := db + "/" + version + "/" + SuccessFile
		f, size, err := l.openRegular(ctx, name, MaxSuccessSize, ErrBadSuccess)
		if err != nil {
			return nil, err
		}
		return &localFile{ctx: ctx, f: f, path: name, size: size, left: size, timeout: l.opts.LocalTimeout}, nil
	})
}

// ReadSuccess reads <prefix>/<db>/<version>/_SUCCESS with one GET.
func (r *s3root) ReadSuccess(ctx context.Context, db, version string) (SuccessManifest, error) {
	return readSuccess(ctx, db, version, func(ctx context.Context) (io.ReadCloser, error) {
		return r.openObject(ctx, r.prefix+db+"/"+version+"/"+SuccessFile)
	})
}
