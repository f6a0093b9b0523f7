package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
)

// PinFile is the marker in a db's directory (<root>/<db>/_PIN) that pins
// the db to one version: a rollback, or a freeze when it names the
// version being served. Deleting it rolls forward to the newest version.
// Its name starts with '_', so no listing takes it for a version.
const PinFile = "_PIN"

// MaxPinSize bounds how much of a marker is read: a version name and a
// newline fit many times over, and a larger object is not a marker.
const MaxPinSize = 1024

// ErrBadPin wraps the error of a marker that exists but does not name
// one valid version: the pin is not followed, and what is served stays.
var ErrBadPin = errors.New("source: malformed _PIN marker")

// ParsePin returns the version a marker's content names. The content is
// one valid version name (topo.ValidName), optionally followed by one
// newline ("\n" or "\r\n"); anything else, an empty marker included, is
// an error wrapping ErrBadPin, so that a half-written or mistaken marker
// never moves a db.
func ParsePin(data []byte) (string, error) {
	s := string(data)
	if len(s) > MaxPinSize {
		return "", fmt.Errorf("%w: %d bytes, more than %d", ErrBadPin, len(s), MaxPinSize)
	}
	if t, ok := strings.CutSuffix(s, "\n"); ok {
		s = strings.TrimSuffix(t, "\r")
	}
	if s == "" {
		return "", fmt.Errorf("%w: empty (write one version name, or delete the marker to unpin)", ErrBadPin)
	}
	if !ValidName(s) {
		return "", fmt.Errorf("%w: %q is not one valid version name", ErrBadPin, truncate(s, 64))
	}
	return s, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// MaxMarkerSize bounds what Marker reads: settings fit many times over.
const MaxMarkerSize = 64 << 10

// readMarker is the shared half of every Source's Marker: it reads the
// marker through open, bounded. An error wrapping fs.ErrNotExist or
// ErrNotFound means there is no marker (nil, nil).
func readMarker(ctx context.Context, db, name string, open func(ctx context.Context) (io.ReadCloser, error)) ([]byte, error) {
	if !ValidName(db) || !strings.HasPrefix(name, "_") || strings.ContainsAny(name, "/\\") {
		return nil, fmt.Errorf("%w: bad marker %q/%q", ErrNotFound, db, name)
	}
	rc, err := open(ctx)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("source: reading %s/%s: %w", db, name, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, MaxMarkerSize+1))
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("source: reading %s/%s: %w", db, name, err)
	case len(data) > MaxMarkerSize:
		return nil, fmt.Errorf("source: %s/%s: more than %d bytes", db, name, MaxMarkerSize)
	}
	if data == nil {
		data = []byte{}
	}
	return data, nil
}

// readPin is the shared half of every Source's Pin: it reads the marker
// through open and parses it. An error wrapping fs.ErrNotExist or
// ErrNotFound, from open or from reading, means there is no marker. An
// object store's Pin is readPin over a GET of <prefix>/<db>/_PIN.
func readPin(ctx context.Context, db string, open func(ctx context.Context) (io.ReadCloser, error)) (string, error) {
	if !ValidName(db) {
		return "", fmt.Errorf("%w: bad db name %q", ErrNotFound, db)
	}
	rc, err := open(ctx)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, ErrNotFound):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("source: reading %s/%s: %w", db, PinFile, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, MaxPinSize+1))
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, ErrNotFound):
		// A store whose reader sends the request on the first Read
		// learns only then that there is no marker.
		return "", nil
	case err != nil:
		return "", fmt.Errorf("source: reading %s/%s: %w", db, PinFile, err)
	}
	v, err := ParsePin(data)
	if err != nil {
		return "", fmt.Errorf("source: %s/%s: %w", db, PinFile, err)
	}
	return v, nil
}
