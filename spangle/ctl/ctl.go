package ctl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"spangle/shared/source"
	"spangle/shared/topo"
)

// ErrUsage is returned for a bad name or a root the command cannot write.
var ErrUsage = errors.New("ctl: bad usage")

// localRoot returns the directory of a local source root (a path or a
// file:// URI); object-store roots are written with their own tools.
func localRoot(root string) (string, error) {
	if strings.Contains(root, "://") {
		p, ok := strings.CutPrefix(root, "file://")
		if !ok {
			return "", fmt.Errorf("%w: %q is not a local root; write %s/<db>/%s with the store's own tools (see the README)", ErrUsage, root, root, source.PinFile)
		}
		return p, nil
	}
	return root, nil
}

// Pin writes <root>/<db>/_PIN naming version, after checking that the
// root lists the version (a pin to a missing one would only show an
// error). The marker is written to a hidden temporary file and renamed,
// so a scan never reads half of it.
func Pin(ctx context.Context, root, db, version string) error {
	if !topo.ValidName(db) || !topo.ValidName(version) {
		return fmt.Errorf("%w: db %q or version %q is not a valid name", ErrUsage, db, version)
	}
	dir, err := localRoot(root)
	if err != nil {
		return err
	}
	src, err := source.Open(dir, source.Options{})
	if err != nil {
		return fmt.Errorf("ctl: %w", err)
	}
	vs, err := src.Versions(ctx, db)
	if err != nil {
		return fmt.Errorf("ctl: listing the versions of %s: %w", db, err)
	}
	if !slices.Contains(vs, version) {
		return fmt.Errorf("%w: %s has no version %q (it has %s)", ErrUsage, db, version, strings.Join(vs, ", "))
	}
	tmp := filepath.Join(dir, db, "."+source.PinFile+".tmp")
	if err := os.WriteFile(tmp, []byte(version+"\n"), 0o644); err != nil {
		return fmt.Errorf("ctl: writing the marker: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, db, source.PinFile)); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("ctl: writing the marker: %w", err)
	}
	return nil
}

// Unpin deletes <root>/<db>/_PIN. It reports whether there was one.
func Unpin(root, db string) (bool, error) {
	if !topo.ValidName(db) {
		return false, fmt.Errorf("%w: db %q is not a valid name", ErrUsage, db)
	}
	dir, err := localRoot(root)
	if err != nil {
		return false, err
	}
	err = os.Remove(filepath.Join(dir, db, source.PinFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("ctl: deleting the marker: %w", err)
	}
	return true, nil
}

// DBPin is one db's pin as a daemon reports it.
type DBPin struct {
	DB string
	// Serving is the version the daemon answers unpinned requests from.
	Serving string
	// Pin is the version the db is held at, "" when unpinned.
	Pin        string
	Generation uint64
	// Pending (routerd) is a pin waiting for its version to be complete.
	Pending string
	// Error says why a marker is not followed (storaged; on the leader
	// also the marker errors it did not publish).
	Error string
}

// status is the union of storaged's and routerd's JSON status, as much
// of it as the pins need: storaged's dbs hold pin as a string, routerd's
// as an object.
type status struct {
	DBs map[string]struct {
		Current       string          `json:"current_version"`
		Served        string          `json:"served_version"`
		Pin           json.RawMessage `json:"pin"`
		PinGeneration uint64          `json:"pin_generation"`
		PinError      string          `json:"pin_error"`
	} `json:"dbs"`
	Coordination *struct {
		PinErrors map[string]string `json:"pin_errors"`
	} `json:"coordination"`
}

// routerPin is routerd's pin object.
type routerPin struct {
	Pinned     string    `json:"pinned"`
	Generation uint64    `json:"generation"`
	Pending    *topo.Pin `json:"pending"`
}

// Status reads the pins of a storaged or a routerd at addr (host:port or
// an http:// URL) from its JSON status, sorted by db.
func Status(ctx context.Context, client *http.Client, addr string) ([]DBPin, error) {
	base := addr
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(base, "/")+"/", nil)
	if err != nil {
		return nil, fmt.Errorf("ctl: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("ctl: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("ctl: %s answered %s", base, resp.Status)
	}
	var st status
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&st); err != nil {
		return nil, fmt.Errorf("ctl: decoding %s's status: %w", base, err)
	}
	var out []DBPin
	for db, d := range st.DBs {
		p := DBPin{DB: db, Serving: d.Current + d.Served, Generation: d.PinGeneration, Error: d.PinError}
		if len(d.Pin) > 0 {
			var rp routerPin
			if err := json.Unmarshal(d.Pin, &p.Pin); err != nil {
				if err := json.Unmarshal(d.Pin, &rp); err != nil {
					return nil, fmt.Errorf("ctl: decoding the pin of %s: %w", db, err)
				}
				p.Pin, p.Generation = rp.Pinned, rp.Generation
				if rp.Pending != nil {
					p.Pending = rp.Pending.Version
				}
			}
		}
		if c := st.Coordination; c != nil && c.PinErrors[db] != "" {
			p.Error = joinErr(p.Error, c.PinErrors[db])
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].DB < out[j].DB })
	return out, nil
}

func joinErr(a, b string) string {
	if a == "" || a == b {
		return b
	}
	return a + "; " + b
}

// Format writes one line per db: what is served, the pin, and any error.
func Format(w io.Writer, pins []DBPin) {
	for _, p := range pins {
		line := fmt.Sprintf("%s\tserving %s", p.DB, orNone(p.Serving))
		switch {
		case p.Pin != "":
			line += fmt.Sprintf("\tpinned to %s (generation %d)", p.Pin, p.Generation)
		default:
			line += "\tnot pinned"
		}
		if p.Pending != "" {
			line += "\tpin to " + p.Pending + " waits for it to be complete"
		}
		if p.Error != "" {
			line += "\terror: " + p.Error
		}
		fmt.Fprintln(w, line)
	}
}

func orNone(s string) string {
	if s == "" {
		return "nothing"
	}
	return s
}
