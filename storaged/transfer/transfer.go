package transfer

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"spangle/shared/dbver"
	"strconv"
	"strings"
)

// Prefix starts the path of a partition copy:
// GET /_partition/<db>/<version>/<partition>.
const Prefix = "/_partition/"

// maxFileSize bounds one received file, so a broken peer cannot fill the
// disk.
const maxFileSize = 64 << 30

// ErrNotHeld: the peer does not serve that partition.
var ErrNotHeld = errors.New("transfer: partition not held by the peer")

// DirFunc returns the directory of a partition this node serves, and
// false when it serves no such partition.
type DirFunc func(p dbver.Partition) (string, bool)

// Handler serves GET Prefix<db>/<version>/<partition> as a tar archive
// of the partition's database files (LOCK and LOG left out).
func Handler(dirOf DirFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", "GET")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		db, version, p, err := ParsePath(r.URL.Path)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		dir, ok := dirOf(dbver.Of(db, version).Partition(p))
		if !ok {
			http.Error(w, "partition not held", http.StatusNotFound)
			return
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			http.Error(w, "partition unreadable", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/x-tar")
		tw := tar.NewWriter(w)
		for _, e := range entries {
			if !e.Type().IsRegular() || e.Name() == "LOCK" || e.Name() == "LOG" {
				continue
			}
			if err := addFile(tw, filepath.Join(dir, e.Name())); err != nil {
				return // the reader sees a truncated archive and fails
			}
		}
		tw.Close()
	})
}

func addFile(tw *tar.Writer, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Name: filepath.Base(path), Mode: 0o644, Size: st.Size(), Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	_, err = io.CopyN(tw, f, st.Size())
	return err
}

// ParsePath splits Prefix<db>/<version>/<partition>.
func ParsePath(p string) (db, version string, partition int, err error) {
	rest, ok := strings.CutPrefix(p, Prefix)
	parts := strings.Split(rest, "/")
	if !ok || len(parts) != 3 || parts[0] == "" || parts[1] == "" {
		return "", "", 0, fmt.Errorf("transfer: path %q is not %s<db>/<version>/<partition>", p, Prefix)
	}
	partition, err = strconv.Atoi(parts[2])
	if err != nil || partition < 0 {
		return "", "", 0, fmt.Errorf("transfer: path %q has a bad partition", p)
	}
	return parts[0], parts[1], partition, nil
}

// Fetch copies partition p from peer (host:port) into dir,
// which it creates, over scheme ("http", or "https" with the cluster's
// TLS, which client then speaks). On error dir may hold part of the copy.
func Fetch(ctx context.Context, client *http.Client, scheme, peer string, p dbver.Partition, dir string) error {
	u := url.URL{Scheme: scheme, Host: peer, Path: Prefix + p.DB + "/" + p.Version + "/" + strconv.Itoa(p.P)}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return fmt.Errorf("transfer: %w", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("transfer: from %s: %w", peer, err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		return fmt.Errorf("%w: %s, %s/%s partition %d", ErrNotHeld, peer, p.DB, p.Version, p.P)
	default:
		return fmt.Errorf("transfer: from %s: %s", peer, resp.Status)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("transfer: %w", err)
	}
	tr := tar.NewReader(resp.Body)
	files := 0
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("transfer: from %s: %w", peer, err)
		}
		name := h.Name
		if h.Typeflag != tar.TypeReg || name != filepath.Base(name) || name == "." || name == ".." || h.Size > maxFileSize {
			return fmt.Errorf("transfer: from %s: refusing archive entry %q", peer, name)
		}
		if err := writeFile(filepath.Join(dir, name), tr, h.Size); err != nil {
			return fmt.Errorf("transfer: from %s: %w", peer, err)
		}
		files++
	}
	if files == 0 {
		return fmt.Errorf("transfer: from %s: empty archive", peer)
	}
	return nil
}

func writeFile(path string, r io.Reader, size int64) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.CopyN(f, r, size); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
