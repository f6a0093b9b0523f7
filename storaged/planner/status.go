package planner

import (
	"fmt"
	"strings"
	"time"

	"spangle/shared/source"
)

// DBStatus is the planner's part of what /healthz and the status page
// show of a db.
type DBStatus struct {
	// Pin is the pinned version in force ("" when unpinned), PinGeneration
	// its step, PinError why the marker (or the cluster's pin) is not
	// followed.
	Pin           string
	PinGeneration uint64
	PinError      string
	// Newer are the versions the source listed above the pin at the last
	// scan: held back, shown as HELD.
	Newer []string
	// FormatError says why the _FORMAT marker is not followed.
	FormatError string
	// Awaiting are the versions waiting for files their _SUCCESS manifest
	// lists, each with the reason to show.
	Awaiting map[string]string
	// Settling are the versions whose files have not settled yet.
	Settling map[string]Settling
}

// Settling is a version whose files have not been unchanged for the
// settle time yet.
type Settling struct {
	Reason string
	Files  []source.File
}

// Status returns the planner's view of db now.
func (pl *Planner) Status(db string) DBStatus {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	d := pl.dbs[db]
	if d == nil {
		return DBStatus{}
	}
	st := DBStatus{Pin: d.pin.version, PinGeneration: d.pin.generation, PinError: d.pin.err,
		Newer: d.pin.newer, FormatError: d.format.err}
	if len(d.awaiting) > 0 {
		st.Awaiting = make(map[string]string, len(d.awaiting))
		for name, missing := range d.awaiting {
			st.Awaiting[name] = awaitingReason(missing)
		}
	}
	now := pl.opts.Now()
	for name, w := range d.watch {
		left := w.since.Add(pl.opts.SettleTime).Sub(now)
		if left <= 0 {
			continue
		}
		if st.Settling == nil {
			st.Settling = map[string]Settling{}
		}
		st.Settling[name] = Settling{Files: w.files, Reason: fmt.Sprintf(
			"waiting for its files to settle: %d data files unchanged since %s; loaded once unchanged for %s (settle_time), or at once with _SUCCESS",
			len(w.files), w.since.UTC().Format(time.RFC3339), pl.opts.SettleTime)}
	}
	return st
}

// awaitingReason is what /healthz and the status page say of a version
// waiting for the files its _SUCCESS manifest lists.
func awaitingReason(missing []string) string {
	shown := missing[:min(len(missing), 5)]
	more := ""
	if len(missing) > len(shown) {
		more = ", ..."
	}
	return fmt.Sprintf("waiting for %d file(s) its _SUCCESS manifest lists: %s%s",
		len(missing), strings.Join(shown, ", "), more)
}

// Settling returns the versions of db whose files have not settled yet,
// without the reasons Status words.
func (pl *Planner) Settling(db string) []string {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	d := pl.dbs[db]
	if d == nil {
		return nil
	}
	var names []string
	now := pl.opts.Now()
	for name, w := range d.watch {
		if w.since.Add(pl.opts.SettleTime).After(now) {
			names = append(names, name)
		}
	}
	return names
}
