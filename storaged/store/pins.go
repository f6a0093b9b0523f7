package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"spangle/shared/topo"
	"spangle/storaged/internal/fsync"
)

// pinsName is the file, at the store's root beside node-id, where a
// standalone node keeps each db's last pin step, so that its generations
// count 1, 2, 3... across restarts. In a cluster the leader keeps them in
// ZooKeeper (pins/<db>) and this file is not written.
const pinsName = "pins.json"

// MaxPinsFileSize bounds what PinSteps reads: a step takes well under 200
// bytes, so this holds thousands of dbs; a larger file is not ours.
const MaxPinsFileSize = 1 << 20

// PinStep is a standalone node's last pin step for a db: the version
// pinned ("" after an unpin) and the step's generation.
type PinStep struct {
	Version    string `json:"version"`
	Generation uint64 `json:"generation"`
}

// PinSteps returns the pin steps this node recorded, by db; none when the
// file does not exist yet. Entries with an invalid db or version name or
// a generation out of range are dropped: such a db starts counting again
// from the greatest valid generation, which the caller never goes below.
func (s *Store) PinSteps() (map[string]PinStep, error) {
	s.pinsMu.Lock()
	defer s.pinsMu.Unlock()
	return s.readPinStepsLocked()
}

func (s *Store) readPinStepsLocked() (map[string]PinStep, error) {
	path := filepath.Join(s.root, pinsName)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]PinStep{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: reading pin steps: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxPinsFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("store: reading %s: %w", path, err)
	}
	if len(b) > MaxPinsFileSize {
		return nil, fmt.Errorf("store: %s is over %d bytes: not a pin record of ours", path, MaxPinsFileSize)
	}
	var raw map[string]PinStep
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("store: parsing %s: %w", path, err)
	}
	out := make(map[string]PinStep, len(raw))
	for db, st := range raw {
		if !topo.ValidName(db) || (st.Version != "" && !topo.ValidName(st.Version)) ||
			st.Generation == 0 || st.Generation > topo.MaxPinGeneration {
			continue
		}
		out[db] = st
	}
	return out, nil
}

// SavePinStep records db's pin step durably (written beside, fsynced,
// renamed over the file, directory fsynced) before it returns.
func (s *Store) SavePinStep(db string, st PinStep) error {
	if !topo.ValidName(db) || (st.Version != "" && !topo.ValidName(st.Version)) {
		return fmt.Errorf("store: bad pin step %q/%q", db, st.Version)
	}
	s.pinsMu.Lock()
	defer s.pinsMu.Unlock()
	steps, err := s.readPinStepsLocked()
	if err != nil {
		// An unreadable record is replaced: the caller never steps below
		// the generation it holds in memory, and the file is only ours.
		steps = map[string]PinStep{}
	}
	steps[db] = st
	b, err := json.MarshalIndent(steps, "", "  ")
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	path := filepath.Join(s.root, pinsName)
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("store: saving pin step: %w", err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("store: saving pin step of %s: %w", db, err)
	}
	if err := fsync.Path(s.root); err != nil {
		return fmt.Errorf("store: syncing %s: %w", s.root, err)
	}
	return nil
}
