package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"spangle/shared/topo"
)

// ErrNotFound is returned when a db, version or file is not in the root.
var ErrNotFound = errors.New("source: not found")

// ErrBadRoot is returned by Open for a root it cannot serve.
var ErrBadRoot = errors.New("source: bad root")

// ErrUnreadable is returned by Files when a listed data file cannot be
// read (a symlink leading out of the root, a dangling link, something
// that is not a file): a version with a file it cannot read must fail
// whole, never be served with fewer partitions. The error names the file.
var ErrUnreadable = errors.New("source: data file cannot be read")

// ErrUnavailable is returned when the source could not be reached or read
// (a network error, S3 down or answering with an error, a local I/O
// error): the data may well be fine, and trying again later may work. A
// load that fails with it is retried without waiting for its files to
// change, unlike one that found bad data.
var ErrUnavailable = errors.New("source: unavailable")

// SuccessFile is the marker Hadoop writes when a job succeeded.
const SuccessFile = "_SUCCESS"

// File is one data file of a version. Size and ModTime let a local copy
// tell whether the source changed since it was loaded.
type File struct {
	Name    string    `json:"name"`
	Size    int64     `json:"size"`
	ModTime time.Time `json:"mtime"`
}

// SameFiles reports whether two listings of a version are the same: the
// same names, sizes and modification times, in the same order. A version
// whose listing changed is one being written again.
func SameFiles(a, b []File) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || a[i].Size != b[i].Size || !a[i].ModTime.Equal(b[i].ModTime) {
			return false
		}
	}
	return true
}

// Source is a source root. Implementations are safe for concurrent use.
type Source interface {
	// DBs returns the valid db names in the root, sorted.
	DBs(ctx context.Context) ([]string, error)
	// Versions returns the valid version names of db, sorted ascending, so
	// the newest is last. With RequireSuccess, versions without _SUCCESS
	// are left out.
	Versions(ctx context.Context, db string) ([]string, error)
	// Files returns the data files of a version, sorted by name: regular
	// files whose names are not hidden (do not start with '_' or '.').
	// Directories are not data files and are skipped; any other listed
	// name that cannot be read as a file fails with ErrUnreadable.
	Files(ctx context.Context, db, version string) ([]File, error)
	// Succeeded reports whether the version holds _SUCCESS: its writer
	// finished, so its files will not change (an object store answers it
	// with one HEAD of the marker).
	Succeeded(ctx context.Context, db, version string) (bool, error)
	// ReadSuccess reads the version's _SUCCESS marker, at most
	// MaxSuccessSize+1 bytes of it, and parses it (ParseSuccess): a JSON
	// manifest lists the files the job wrote, and the version is ready
	// only once each is there. No marker is an error wrapping
	// ErrNotFound; a marker that cannot be used wraps ErrBadSuccess. An
	// object store answers it with one GET.
	ReadSuccess(ctx context.Context, db, version string) (SuccessManifest, error)
	// Pin returns the version the db's marker (<root>/<db>/_PIN, see
	// PinFile) names, or "" when there is no marker. A marker that is not
	// one valid version name fails with an error wrapping ErrBadPin; any
	// other error means the marker could not be read (the caller keeps
	// what it had). An object store answers it with one GET of
	// <prefix>/<db>/_PIN (a 404 is ""), parsed by ParsePin, reading at
	// most MaxPinSize+1 bytes. The pinned version need not exist: the
	// caller checks it against Versions.
	Pin(ctx context.Context, db string) (string, error)
	// Marker returns the content of the db's marker file
	// <root>/<db>/<name> (name starts with '_', like FormatFile), or nil
	// when there is none. At most MaxMarkerSize bytes are read; a larger
	// marker is an error. An object store answers it with one GET.
	Marker(ctx context.Context, db, name string) ([]byte, error)
	// Open opens one data file of a version for reading.
	Open(ctx context.Context, db, version, name string) (io.ReadCloser, error)
	// String names the root for logs.
	String() string
}

// Options configures Open.
type Options struct {
	// RequireSuccess makes a version count only once it holds _SUCCESS.
	RequireSuccess bool
	// S3 configures s3:// roots.
	S3 S3Options
	// Registerer receives an s3:// root's metrics; nil registers nowhere.
	Registerer prometheus.Registerer
	// LocalTimeout bounds each operation on a local root (a listing, a
	// stat, an open, one read, a close), as the HTTP client's deadlines
	// bound S3's; past it the operation fails with ErrUnavailable and its
	// system call is left behind, so that a hung file system holds no
	// scan or shutdown. Default DefaultLocalTimeout.
	LocalTimeout time.Duration
}

// DefaultLocalTimeout is the default Options.LocalTimeout: far above
// what any healthy disk or NFS server takes.
const DefaultLocalTimeout = time.Minute

// Open returns the Source for root: a local path ("/data", "data"), a
// file:// URI ("file:///data") or an S3 bucket and prefix
// ("s3://bucket/prefix"). It reaches no server: an S3 store that is down
// shows in the first listing, not here.
func Open(root string, opts Options) (Source, error) {
	if root == "" {
		return nil, fmt.Errorf("%w: empty", ErrBadRoot)
	}
	path := root
	if strings.Contains(root, "://") {
		u, err := url.Parse(root)
		if err != nil {
			return nil, fmt.Errorf("%w: %q: %v", ErrBadRoot, root, err)
		}
		if u.Scheme == "s3" {
			return openS3(root, u, opts)
		}
		if u.Scheme != "file" {
			return nil, fmt.Errorf("%w: %q: scheme %q is not supported (use a path, file:// or s3://)", ErrBadRoot, root, u.Scheme)
		}
		if u.Host != "" && u.Host != "localhost" {
			return nil, fmt.Errorf("%w: %q: file:// URIs name no host", ErrBadRoot, root)
		}
		path = u.Path
	}
	return openLocal(path, opts)
}

// Newest returns the newest version of names (sorted ascending), or "".
func Newest(versions []string) string {
	if len(versions) == 0 {
		return ""
	}
	return versions[len(versions)-1]
}

// Hidden reports whether name is one of Hadoop's hidden files.
func Hidden(name string) bool {
	return strings.HasPrefix(name, "_") || strings.HasPrefix(name, ".")
}

// ValidName reports whether name may be a db or version.
func ValidName(name string) bool { return topo.ValidName(name) }

func sortedValid(names []string) []string {
	out := names[:0]
	for _, n := range names {
		if ValidName(n) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}
