package planner

import (
	"context"
	"fmt"
	"slices"

	"go.uber.org/zap"

	"spangle/shared/parquetkv"
)

// formatState is a db's _FORMAT marker: how its Parquet versions map
// columns to keys and values. Guarded by Planner.mu.
type formatState struct {
	// spec is the last marker read well (or DefaultFormat when there was
	// none); valid once read is set.
	spec parquetkv.Format
	read bool
	// err says why the marker is not followed; until it is fixed no new
	// version of the db is loaded, so what is served stays.
	err string
}

// formatFor reads db's _FORMAT at a scan, as pinFor reads _PIN, and
// returns the versions the scan may plan from: all of planned when the
// marker is good or absent; when it cannot be read or parsed, only the
// versions the manager already has, so that no version is loaded with
// settings nobody wrote.
func (pl *Planner) formatFor(ctx context.Context, db string, planned []string) []string {
	data, err := pl.opts.Source.Marker(ctx, db, parquetkv.FormatFile)
	spec := parquetkv.DefaultFormat()
	if err == nil && data != nil {
		spec, err = parquetkv.ParseFormat(data)
	}
	if err != nil {
		planned = slices.DeleteFunc(slices.Clone(planned), func(v string) bool { return !pl.host.Version(db, v).Any })
	}
	changed := pl.takeFormat(db, spec, err)
	if changed {
		// A version that failed under the old marker (a duplicate key, a
		// missing column) may load under the new one: it is tried again.
		// Called without the planner's lock (the manager's comes first).
		pl.host.RetryFailed(db)
	}
	return planned
}

// takeFormat records the outcome of reading db's marker: the spec when
// err is nil, else why it is not followed. It reports whether a marker
// read well before changed.
func (pl *Planner) takeFormat(db string, spec parquetkv.Format, err error) (changed bool) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	fs := &pl.dbLocked(db).format
	if err != nil {
		why := fmt.Sprintf("versions: %s/%s not followed; no new version is loaded: %v", db, parquetkv.FormatFile, err)
		if fs.err != why {
			pl.log.Error("format marker not followed; what is served stays", zap.String("db", db), zap.Error(err))
		}
		fs.err = why
		return false
	}
	changed = fs.read && !sameFormat(fs.spec, spec)
	if changed {
		pl.log.Info("format marker changed; it applies to versions loaded from now on", zap.String("db", db))
	}
	fs.spec, fs.read, fs.err = spec, true, ""
	return changed
}

func sameFormat(a, b parquetkv.Format) bool {
	return a.Implicit() == b.Implicit() && a.KeyColumn == b.KeyColumn && a.ValueColumn == b.ValueColumn &&
		a.ContentType == b.ContentType && slices.Equal(a.Columns, b.Columns) &&
		slices.Equal(a.ExcludeColumns, b.ExcludeColumns) && a.Duplicates == b.Duplicates && a.Partitions == b.Partitions
}

// Format returns db's _FORMAT as last read well, for its next loads;
// parquetkv.DefaultFormat until one was.
func (pl *Planner) Format(db string) parquetkv.Format {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if d := pl.dbs[db]; d != nil && d.format.read {
		return d.format.spec
	}
	return parquetkv.DefaultFormat()
}
