package versions

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.uber.org/zap"

	"spangle/shared/source"
	"spangle/shared/wire"
)

// successReady reports whether a version's _SUCCESS marker lets it load
// with files. A marker that is a committer's JSON manifest lists the files
// the job wrote: the version is ready only once every one of them is
// listed among files, so a version uploaded file by file (aws s3 cp
// --recursive writes in any order) is never served with part of its
// partitions. No marker, or a plain one, says nothing against loading
// (settle time and require_success_file decide, as before). known is
// true when the manager holds the version from these same files: it was
// ready then, and the marker is not read again. An error wrapping
// source.ErrBadSuccess is a marker that cannot be used; any other error,
// a marker that could not be read now.
func (m *Manager) successReady(ctx context.Context, db, name string, files []source.File, known bool) (bool, error) {
	if known {
		return true, nil
	}
	man, err := m.opts.Source.ReadSuccess(ctx, db, name)
	switch {
	case errors.Is(err, source.ErrNotFound):
		return true, nil
	case err != nil:
		return false, err
	case !man.Listed:
		return true, nil
	}
	missing := man.Missing(files)
	m.mu.Lock()
	d := m.dbLocked(db)
	before := d.awaiting[name]
	if len(missing) == 0 {
		delete(d.awaiting, name)
	} else {
		d.awaiting[name] = missing
	}
	m.mu.Unlock()
	if len(missing) == 0 {
		if before != nil {
			m.log.Info("every file the _SUCCESS manifest lists is there; loading the version", zap.String("db", db),
				zap.String("version", name), zap.Int("files", len(man.Files)))
		}
		return true, nil
	}
	if !slices.Equal(before, missing) {
		m.log.Info("the _SUCCESS manifest lists files not there yet; waiting for them", zap.String("db", db),
			zap.String("version", name), zap.Int("missing", len(missing)), zap.Int("listed", len(man.Files)),
			zap.Strings("first_missing", missing[:min(len(missing), 5)]), zap.String("committer", man.Committer))
	}
	return false, nil
}

// pruneAwaiting forgets the versions of d waiting for files that a scan
// no longer saw waiting.
func pruneAwaiting(d *dbState, keep map[string]bool) {
	for name := range d.awaiting {
		if !keep[name] {
			delete(d.awaiting, name)
		}
	}
}

// awaitingHealth is what /healthz and the status page say of a version
// waiting for the files its _SUCCESS manifest lists.
func awaitingHealth(missing []string) (state, reason string) {
	shown := missing[:min(len(missing), 5)]
	more := ""
	if len(missing) > len(shown) {
		more = ", ..."
	}
	return wire.StateBuilding, fmt.Sprintf("waiting for %d file(s) its _SUCCESS manifest lists: %s%s",
		len(missing), strings.Join(shown, ", "), more)
}
