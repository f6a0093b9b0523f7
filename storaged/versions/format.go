package versions

import (
	"context"
	"fmt"
	"slices"

	"go.uber.org/zap"

	"spangle/shared/parquetkv"
	"spangle/storaged/loader"
)

// formatState is a db's _FORMAT marker: how its Parquet versions map
// columns to keys and values. Guarded by Manager.mu.
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
// versions the node already has, so that no version is loaded with
// settings nobody wrote.
func (m *Manager) formatFor(ctx context.Context, db string, planned []string) []string {
	data, err := m.opts.Source.Marker(ctx, db, parquetkv.FormatFile)
	spec := parquetkv.DefaultFormat()
	if err == nil && data != nil {
		spec, err = parquetkv.ParseFormat(data)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	d := m.dbLocked(db)
	fs := &d.format
	if err != nil {
		why := fmt.Sprintf("versions: %s/%s not followed; no new version is loaded: %v", db, parquetkv.FormatFile, err)
		if fs.err != why {
			m.log.Error("format marker not followed; what is served stays", zap.String("db", db), zap.Error(err))
		}
		fs.err = why
		return slices.DeleteFunc(slices.Clone(planned), func(v string) bool { return d.versions[v] == nil })
	}
	if fs.read && !sameFormat(fs.spec, spec) {
		m.log.Info("format marker changed; it applies to versions loaded from now on", zap.String("db", db))
		// A version that failed under the old marker (a duplicate key, a
		// missing column) may load under the new one: it is tried again.
		for _, vs := range d.versions {
			if vs.phase == failed {
				m.forgetLocked(db, d, vs)
			}
		}
	}
	fs.spec, fs.read, fs.err = spec, true, ""
	return planned
}

func sameFormat(a, b parquetkv.Format) bool {
	return a.Implicit() == b.Implicit() && a.KeyColumn == b.KeyColumn && a.ValueColumn == b.ValueColumn &&
		a.ContentType == b.ContentType && slices.Equal(a.Columns, b.Columns) &&
		slices.Equal(a.ExcludeColumns, b.ExcludeColumns) && a.Duplicates == b.Duplicates && a.Partitions == b.Partitions
}

// loaderOptions returns the options a load of db's versions uses: the
// manager's, with the node's load limit, its logger, and the db's
// _FORMAT for Parquet.
func (m *Manager) loaderOptions(db string) loader.Options {
	lopts := m.opts.Loader
	lopts.Limit = m.limit
	lopts.Log = m.log
	m.mu.Lock()
	lopts.Formats = m.formatsLocked(db)
	m.mu.Unlock()
	return lopts
}

// formats returns the input formats of db's versions: the manager's, its
// Parquet format mapping columns (and counting partitions) as the db's
// _FORMAT says.
func (m *Manager) formats(db string) []loader.Format {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.formatsLocked(db)
}

func (m *Manager) formatsLocked(db string) []loader.Format {
	spec := parquetkv.DefaultFormat()
	if d := m.dbs[db]; d != nil && d.format.read {
		spec = d.format.spec
	}
	return loader.WithParquet(m.opts.Loader.Formats, spec)
}
