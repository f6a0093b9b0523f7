package planner

import (
	"context"
	"errors"
	"slices"

	"go.uber.org/zap"

	"spangle/shared/source"
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
func (pl *Planner) successReady(ctx context.Context, db, name string, files []source.File, known bool) (bool, error) {
	if known {
		return true, nil
	}
	man, err := pl.opts.Source.ReadSuccess(ctx, db, name)
	switch {
	case errors.Is(err, source.ErrNotFound):
		return true, nil
	case err != nil:
		return false, err
	case !man.Listed:
		return true, nil
	}
	missing := man.Missing(files)
	pl.mu.Lock()
	d := pl.dbLocked(db)
	before := d.awaiting[name]
	if len(missing) == 0 {
		delete(d.awaiting, name)
	} else {
		d.awaiting[name] = missing
	}
	pl.mu.Unlock()
	if len(missing) == 0 {
		if before != nil {
			pl.log.Info("every file the _SUCCESS manifest lists is there; loading the version", zap.String("db", db),
				zap.String("version", name), zap.Int("files", len(man.Files)))
		}
		return true, nil
	}
	if !slices.Equal(before, missing) {
		pl.log.Info("the _SUCCESS manifest lists files not there yet; waiting for them", zap.String("db", db),
			zap.String("version", name), zap.Int("missing", len(missing)), zap.Int("listed", len(man.Files)),
			zap.Strings("first_missing", missing[:min(len(missing), 5)]), zap.String("committer", man.Committer))
	}
	return false, nil
}
