package versions

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	"go.uber.org/zap"

	"spangle/shared/source"
	"spangle/storaged/loader"
	"spangle/storaged/table"
)

// dropGrace is how long a dropped partition stays open for requests that
// acquired the version before the drop.
const dropGrace = time.Minute

// servableLocked returns the state of db/version if it is servable (or
// loaded and waiting for activation), else nil.
func (m *Manager) servableLocked(db, version string) *vstate {
	d := m.dbs[db]
	if d == nil {
		return nil
	}
	vs := d.versions[version]
	if vs == nil || !vs.phase.servable() {
		return nil
	}
	return vs
}

// HeldPartitions returns the partitions of db/version this node serves,
// ascending; nil when it serves no such version.
func (m *Manager) HeldPartitions(db, version string) []int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if vs := m.servableLocked(db, version); vs != nil {
		return vs.v.Held()
	}
	return nil
}

// PartitionDir returns the directory of partition p of db/version when
// this node serves it: its files are immutable, so a peer may copy them.
// A partition found corrupt is not offered until it is rebuilt.
func (m *Manager) PartitionDir(db, version string, p int) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	vs := m.servableLocked(db, version)
	if vs == nil || p < 0 || p >= len(vs.v.parts) || vs.v.parts[p] == nil || m.rep.bad[vs][p] != nil {
		return "", false
	}
	return m.opts.Store.PartitionDir(db, version, p), true
}

// AddPartition makes this node serve partition p of a version it already
// serves, for the coordinator's re-replication and rebalancing. fill, if
// not nil, writes the partition's database into an empty directory (a
// copy from a peer); if it is nil or fails, the partition is built from
// the source. The partition is then served beside the others and
// announced through Hooks.PartitionReady. Errors: ErrVersionNotHeld.
func (m *Manager) AddPartition(ctx context.Context, db, version string, p int, fill func(ctx context.Context, dir string) error) error {
	m.mu.Lock()
	vs := m.servableLocked(db, version)
	if vs == nil {
		m.mu.Unlock()
		return fmt.Errorf("%w: %s/%s", ErrVersionNotHeld, db, version)
	}
	n := vs.v.NumPartitions
	if p < 0 || p >= n {
		m.mu.Unlock()
		return fmt.Errorf("versions: %s/%s has no partition %d", db, version, p)
	}
	if vs.v.parts[p] != nil {
		m.mu.Unlock()
		return nil
	}
	files := vs.files
	m.mu.Unlock()

	dir := m.opts.Store.PartitionDir(db, version, p)
	from, err := m.fillPartition(ctx, db, version, files, p, dir, fill)
	if err != nil {
		return err
	}
	part, err := table.OpenPartition(dir, m.opts.Cache)
	if err != nil {
		os.RemoveAll(dir)
		return fmt.Errorf("versions: %w", err)
	}

	m.mu.Lock()
	if m.servableLocked(db, version) != vs {
		m.mu.Unlock()
		part.Close()
		return fmt.Errorf("%w: %s/%s went while partition %d was fetched", ErrVersionNotHeld, db, version, p)
	}
	if vs.v.parts[p] != nil { // added meanwhile
		m.mu.Unlock()
		part.Close()
		return nil
	}
	vs.v = vs.v.withPartition(p, part)
	m.recordHeldLocked(db, version, vs.v.Held())
	m.publishLocked()
	m.mu.Unlock()
	m.log.Info("partition added", zap.String("db", db), zap.String("version", version), zap.Int("partition", p), zap.String("from", from))
	if f := m.opts.Hooks.PartitionReady; f != nil {
		f(db, version, p, n)
	}
	return nil
}

// fillPartition writes partition p of db/version into dir, emptied
// first: a copy by fill (from a peer), checked block by block, since the
// peer's disk may have rotted too; else, when fill is nil or fails, a
// build from the source, synced. It returns where the partition came
// from, "peer" or "source".
func (m *Manager) fillPartition(ctx context.Context, db, version string, files []source.File, p int, dir string, fill func(ctx context.Context, dir string) error) (string, error) {
	if err := os.RemoveAll(dir); err != nil {
		return "", fmt.Errorf("versions: %w", err)
	}
	if fill != nil {
		err := fill(ctx, dir)
		if err == nil {
			if err = table.VerifyPartition(ctx, dir, nil); err == nil {
				m.metrics.partitions.WithLabelValues(fromPeer).Inc()
				return fromPeer, nil
			}
		}
		m.log.Info("no good copy of the partition from a peer; building it from the source", zap.String("db", db),
			zap.String("version", version), zap.Int("partition", p), zap.Error(err))
		if err := os.RemoveAll(dir); err != nil {
			return "", fmt.Errorf("versions: %w", err)
		}
	}
	lopts := m.loaderOptions(db)
	res, err := loader.Load(ctx, loader.Request{
		Source: m.opts.Source, DB: db, Version: version, Files: files, Held: []int{p},
		Dir: func(int) string { return dir },
	}, lopts)
	if err == nil {
		// The manifest will list it: on disk first.
		err = res.Sync()
	}
	if err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("versions: building partition %d of %s/%s: %w", p, db, version, err)
	}
	m.metrics.records.Add(float64(res.Records))
	m.metrics.partitions.WithLabelValues(fromSource).Inc()
	return fromSource, nil
}

// Where a partition added or rebuilt came from, in logs and metrics.
const (
	fromPeer   = "peer"
	fromSource = "source"
)

// DropPartition stops serving partition p of db/version, which the
// coordinator gave to other nodes. Requests already under way finish:
// the partition is closed and deleted a minute later.
func (m *Manager) DropPartition(_ context.Context, db, version string, p int) error {
	m.mu.Lock()
	vs := m.servableLocked(db, version)
	if vs == nil || p < 0 || p >= len(vs.v.parts) || vs.v.parts[p] == nil {
		m.mu.Unlock()
		return nil
	}
	part := vs.v.parts[p]
	vs.v = vs.v.withPartition(p, nil)
	m.recordHeldLocked(db, version, vs.v.Held())
	m.publishLocked()
	m.mu.Unlock()
	dir := m.opts.Store.PartitionDir(db, version, p)
	time.AfterFunc(dropGrace, func() {
		part.Close()
		os.RemoveAll(dir)
	})
	m.log.Info("partition dropped", zap.String("db", db), zap.String("version", version), zap.Int("partition", p))
	return nil
}

// recordHeldLocked rewrites the local manifest's partition list, so a
// restart reuses what the node holds now.
func (m *Manager) recordHeldLocked(db, version string, held []int) {
	man, err := m.opts.Store.ReadManifest(db, version)
	if err != nil {
		return
	}
	man.Partitions = held
	if err := m.opts.Store.WriteManifest(man); err != nil {
		m.log.Warn("recording the held partitions", zap.String("db", db), zap.String("version", version), zap.Error(err))
	}
}

// withPartition returns a copy of v serving part as partition p (nil: not
// serving p). The copy shares v's open partitions; v stays usable by the
// requests that hold it.
func (v *Version) withPartition(p int, part *table.Partition) *Version {
	parts := slices.Clone(v.parts)
	parts[p] = part
	nv := newVersion(v.DB, v.Name, v.NumPartitions, v.Created, v.ContentType, parts, v.reports)
	for i := range v.corrupt {
		if i != p {
			nv.corrupt[i].Store(v.corrupt[i].Load())
		}
	}
	nv.current.Store(v.current.Load())
	nv.lastUsed.Store(v.lastUsed.Load())
	return nv
}
