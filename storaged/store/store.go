package store

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"spangle/shared/dbver"
	"spangle/shared/source"
	"spangle/shared/topo"
	"spangle/storaged/internal/fsync"
)

// manifestName is the version manifest's file name inside a version dir.
const manifestName = "spangle-version.json"

// ErrNoManifest is returned by ReadManifest when a version has none, as
// after a crash early in a build.
var ErrNoManifest = errors.New("store: no manifest")

// Manifest records how a local version was built. A version is served
// after a restart only when Complete is set and Files still match the
// source.
type Manifest struct {
	DB      string `json:"db"`
	Version string `json:"version"`
	// NumPartitions is the version's partition count, which its files'
	// input format says (see loader.NumPartitions).
	NumPartitions int `json:"num_partitions"`
	// Partitions lists the partitions built here, ascending.
	Partitions []int `json:"partitions"`
	// Files are the source files the version was built from.
	Files []source.File `json:"files"`
	// Created is when the source version was written (its newest file).
	Created time.Time `json:"created"`
	// Loaded is when the build finished.
	Loaded time.Time `json:"loaded"`
	// Complete is set once every partition was written and synced.
	Complete bool `json:"complete"`
	// ContentType is the Content-Type of the values as they were built
	// (loader.Layout.ContentType); empty: the node's setting.
	ContentType string `json:"content_type,omitempty"`
}

// Matches reports whether a complete local version built from m can serve
// a source version listing files, for the partitions in want.
func (m Manifest) Matches(files []source.File, want []int) bool {
	if !m.Complete || len(files) != len(m.Files) {
		return false
	}
	for i, f := range files {
		g := m.Files[i]
		if f.Name != g.Name || f.Size != g.Size || !f.ModTime.Equal(g.ModTime) {
			return false
		}
	}
	held := map[int]bool{}
	for _, p := range m.Partitions {
		held[p] = true
	}
	for _, p := range want {
		if !held[p] {
			return false
		}
	}
	return true
}

// Store is the local store's root directory. Its methods are safe for
// concurrent use on different versions; one version is built or removed by
// one caller at a time.
type Store struct {
	root string
	// dirs serializes creating a version's directory (WriteManifest) with
	// deleting its db's directory once empty (Remove): otherwise removing
	// the last version of a db can delete the db's directory between the
	// two mkdirs of another version's creation, which then fails.
	dirs sync.Mutex
	// pinsMu serializes reading and rewriting pins.json (pins.go).
	pinsMu sync.Mutex
}

// Open creates root if needed and returns the store in it.
func Open(root string) (*Store, error) {
	if root == "" {
		return nil, errors.New("store: empty local store path")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	return &Store{root: abs}, nil
}

// Root is the store's directory.
func (s *Store) Root() string { return s.root }

func checkNames(db, version string) error {
	if !topo.ValidName(db) || !topo.ValidName(version) {
		return fmt.Errorf("store: bad name %q/%q", db, version)
	}
	return nil
}

// VersionDir is where a version lives.
func (s *Store) VersionDir(v dbver.Version) string {
	db, version := v.DB, v.Version
	return filepath.Join(s.root, db, version)
}

// RebuildDir is where a new copy of a served version is built while the
// copy in VersionDir keeps serving; SwapRebuilt moves it in place. Its
// name starts with '.', which no version can: List, and so the clean-up
// of unknown versions, never takes it for one.
func (s *Store) RebuildDir(v dbver.Version) string {
	db, version := v.DB, v.Version
	return filepath.Join(s.root, db, "."+version+".rebuild")
}

// retiredDir is where SwapRebuilt puts the copy it replaces, until
// RemoveRetired deletes it.
func (s *Store) retiredDir(v dbver.Version) string {
	db, version := v.DB, v.Version
	return filepath.Join(s.root, db, "."+version+".retired")
}

// RebuildPartitionDir is where partition p of a version's rebuild lives.
func (s *Store) RebuildPartitionDir(p dbver.Partition) string {
	return filepath.Join(s.RebuildDir(p.Of()), "p-"+strconv.Itoa(p.P))
}

// SwapRebuilt puts a version's rebuilt copy (RebuildDir, its manifest
// complete) in the place of the copy it replaces, which is set aside
// until RemoveRetired. Open files of the replaced copy stay readable. A
// crash between the two renames leaves no copy in place: the version is
// built again after a restart.
func (s *Store) SwapRebuilt(v dbver.Version) error {
	db, version := v.DB, v.Version
	if err := checkNames(db, version); err != nil {
		return err
	}
	cur, retired := s.VersionDir(v), s.retiredDir(v)
	if err := os.RemoveAll(retired); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if err := os.Rename(cur, retired); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("store: setting %s/%s aside: %w", db, version, err)
	}
	if err := os.Rename(s.RebuildDir(v), cur); err != nil {
		if rerr := os.Rename(retired, cur); rerr != nil {
			err = errors.Join(err, rerr)
		}
		return fmt.Errorf("store: putting the rebuilt %s/%s in place: %w", db, version, err)
	}
	if err := fsync.Path(filepath.Join(s.root, db)); err != nil {
		return fmt.Errorf("store: syncing %s: %w", db, err)
	}
	return nil
}

// RemoveRetired deletes the copy of a version that SwapRebuilt replaced.
func (s *Store) RemoveRetired(v dbver.Version) error {
	db, version := v.DB, v.Version
	if err := checkNames(db, version); err != nil {
		return err
	}
	if err := os.RemoveAll(s.retiredDir(v)); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return nil
}

// RemoveRebuild deletes a version's rebuild, finished or not.
func (s *Store) RemoveRebuild(v dbver.Version) error {
	db, version := v.DB, v.Version
	if err := checkNames(db, version); err != nil {
		return err
	}
	if err := os.RemoveAll(s.RebuildDir(v)); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return nil
}

// PartitionDir is where partition p of a version lives.
func (s *Store) PartitionDir(p dbver.Partition) string {
	return filepath.Join(s.root, p.DB, p.Version, "p-"+strconv.Itoa(p.P))
}

// ReadManifest returns a version's manifest, or ErrNoManifest.
func (s *Store) ReadManifest(v dbver.Version) (Manifest, error) {
	db, version := v.DB, v.Version
	var m Manifest
	if err := checkNames(db, version); err != nil {
		return m, err
	}
	b, err := os.ReadFile(filepath.Join(s.VersionDir(v), manifestName))
	if errors.Is(err, fs.ErrNotExist) {
		return m, fmt.Errorf("%w: %s/%s", ErrNoManifest, db, version)
	}
	if err != nil {
		return m, fmt.Errorf("store: %w", err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("store: manifest of %s/%s: %w", db, version, err)
	}
	if m.DB != db || m.Version != version {
		return m, fmt.Errorf("store: manifest of %s/%s names %s/%s", db, version, m.DB, m.Version)
	}
	return m, nil
}

// WriteManifest replaces a version's manifest atomically (write, sync,
// rename), so a crash leaves the old one or the new one. An incomplete
// manifest is not synced: losing it loses nothing, since a version
// without a manifest is discarded like one whose build did not finish.
func (s *Store) WriteManifest(m Manifest) error {
	if err := checkNames(m.DB, m.Version); err != nil {
		return err
	}
	return s.writeManifest(s.VersionDir(dbver.Of(m.DB, m.Version)), m)
}

// WriteRebuildManifest writes m, as WriteManifest does, into the rebuild
// directory of its version (RebuildDir).
func (s *Store) WriteRebuildManifest(m Manifest) error {
	if err := checkNames(m.DB, m.Version); err != nil {
		return err
	}
	return s.writeManifest(s.RebuildDir(dbver.Of(m.DB, m.Version)), m)
}

func (s *Store) writeManifest(dir string, m Manifest) error {
	s.dirs.Lock()
	err := os.MkdirAll(dir, 0o755)
	s.dirs.Unlock()
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	tmp := filepath.Join(dir, manifestName+".tmp")
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	_, err = f.Write(b)
	if err == nil && m.Complete {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, manifestName))
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("store: writing manifest of %s/%s: %w", m.DB, m.Version, err)
	}
	if m.Complete {
		if err := fsync.Path(dir); err != nil {
			return fmt.Errorf("store: syncing %s: %w", dir, err)
		}
	}
	return nil
}

// List returns the versions present locally, by db, whatever their state.
// Entries with invalid names are not ours and are left alone.
func (s *Store) List() (map[string][]string, error) {
	out := map[string][]string{}
	dbs, err := os.ReadDir(s.root)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	for _, d := range dbs {
		if !d.IsDir() || !topo.ValidName(d.Name()) {
			continue
		}
		vs, err := os.ReadDir(filepath.Join(s.root, d.Name()))
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed with its last version since the root was read
		}
		if err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
		for _, v := range vs {
			if v.IsDir() && topo.ValidName(v.Name()) {
				out[d.Name()] = append(out[d.Name()], v.Name())
			}
		}
		sort.Strings(out[d.Name()])
	}
	return out, nil
}

// Remove deletes a version from disk, with its rebuild and the copy a
// rebuild replaced if any, and its db's dir once empty.
func (s *Store) Remove(v dbver.Version) error {
	db, version := v.DB, v.Version
	if err := checkNames(db, version); err != nil {
		return err
	}
	for _, dir := range []string{s.VersionDir(v), s.RebuildDir(v), s.retiredDir(v)} {
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("store: removing %s/%s: %w", db, version, err)
		}
	}
	s.dirs.Lock()
	defer s.dirs.Unlock()
	os.Remove(filepath.Join(s.root, db)) // fails while other versions remain
	return nil
}

// NodeID returns the node's persistent identity, creating it on first use.
func (s *Store) NodeID() (string, error) {
	path := filepath.Join(s.root, "node-id")
	if b, err := os.ReadFile(path); err == nil {
		if id := strings.TrimSpace(string(b)); id != "" {
			return id, nil
		}
	}
	var r [8]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", fmt.Errorf("store: %w", err)
	}
	id := hex.EncodeToString(r[:])
	if err := os.WriteFile(path, []byte(id+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("store: %w", err)
	}
	return id, nil
}
