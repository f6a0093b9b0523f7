package versions

import (
	"context"
	"slices"

	"go.uber.org/zap"

	"spangle/shared/dbver"
	"spangle/shared/source"
	"spangle/storaged/repair"
	"spangle/storaged/replica"
	"spangle/storaged/table"
)

// servable returns the state of db/version if it is servable (or
// loaded and waiting for activation), else nil.
func (t dbTable) servable(db, version string) *vstate {
	d := t[db]
	if d == nil {
		return nil
	}
	vs := d.versions[version]
	if vs == nil || !vs.phase.servable() {
		return nil
	}
	return vs
}

// Where a partition added or rebuilt came from, in logs and metrics.
const (
	fromPeer   = repair.FromPeer
	fromSource = repair.FromSource
)

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

// partitionHost is the Manager as storaged/repair sees it (repair.Host):
// the served partitions, read and swapped under the manager's lock.
type partitionHost struct{ m *Manager }

func (h partitionHost) Serving(p dbver.Partition) (*table.Partition, []source.File) {
	h.m.mu.Lock()
	defer h.m.mu.Unlock()
	vs := h.m.dbs.servable(p.DB, p.Version)
	if vs == nil || p.P < 0 || p.P >= len(vs.v.parts) {
		return nil, nil
	}
	return vs.v.parts[p.P], vs.files
}

func (h partitionHost) Fill(ctx context.Context, p dbver.Partition, files []source.File, dir string) (string, error) {
	var fill func(ctx context.Context, dir string) error
	if cp := h.m.opts.Hooks.CopyPartition; cp != nil {
		fill = func(ctx context.Context, dir string) error { return cp(ctx, p, dir) }
	}
	return h.m.build.Fill(ctx, p.DB, p.Version, files, p.P, dir, fill)
}

func (h partitionHost) Swap(p dbver.Partition, old, part *table.Partition) bool {
	m := h.m
	m.mu.Lock()
	defer m.mu.Unlock()
	vs := m.dbs.servable(p.DB, p.Version)
	if vs == nil || p.P < 0 || p.P >= len(vs.v.parts) || vs.v.parts[p.P] != old {
		return false
	}
	vs.v = vs.v.withPartition(p.P, part)
	m.publishLocked()
	return true
}

// afterReuse is called once a version reused from the local store
// serves: storaged/repair deletes what an interrupted rebuild left beside
// its partitions, and scrubs them in the background.
func (m *Manager) afterReuse(db string, vs *vstate) {
	m.mu.Lock()
	ctx := m.ctx
	var held []int
	if m.dbs.servable(db, vs.name) == vs {
		held = vs.v.Held()
	}
	m.mu.Unlock()
	m.rep.Reused(db, vs.name, held)
	if len(held) == 0 {
		return
	}
	if ctx == nil {
		ctx = context.Background()
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		m.rep.Scrub(ctx, db, vs.name, held)
	}()
}

// replicaHost is the Manager as storaged/replica sees it (replica.Host):
// the coordinator adds and drops partitions of served versions through
// it.
type replicaHost struct{ m *Manager }

func (h replicaHost) Served(db, version string, p int) (replica.Served, bool) {
	h.m.mu.Lock()
	defer h.m.mu.Unlock()
	vs := h.m.dbs.servable(db, version)
	if vs == nil {
		return replica.Served{}, false
	}
	s := replica.Served{Token: vs, Files: vs.files, N: vs.v.NumPartitions}
	if p >= 0 && p < len(vs.v.parts) {
		s.Part = vs.v.parts[p]
	}
	return s, true
}

func (h replicaHost) Fill(ctx context.Context, db, version string, files []source.File, p int, dir string, fill func(ctx context.Context, dir string) error) (string, error) {
	return h.m.build.Fill(ctx, db, version, files, p, dir, fill)
}

func (h replicaHost) Swap(token any, p int, old, part *table.Partition) (served, swapped bool) {
	m := h.m
	m.mu.Lock()
	defer m.mu.Unlock()
	vs, _ := token.(*vstate)
	if vs == nil || !vs.phase.servable() {
		return false, false
	}
	if p < 0 || p >= len(vs.v.parts) || vs.v.parts[p] != old {
		return true, false
	}
	vs.v = vs.v.withPartition(p, part)
	// The local manifest lists what the node holds now, so that a
	// restart reuses it.
	if man, err := m.opts.Store.ReadManifest(vs.v.DB, vs.name); err == nil {
		man.Partitions = vs.v.Held()
		if err := m.opts.Store.WriteManifest(man); err != nil {
			m.log.Warn("recording the held partitions", zap.String("db", vs.v.DB), zap.String("version", vs.name), zap.Error(err))
		}
	}
	m.publishLocked()
	return true, true
}

func (h replicaHost) Ready(db, version string, p, n int) {
	if f := h.m.opts.Hooks.PartitionReady; f != nil {
		f(db, version, p, n)
	}
}

// Replicas adds and drops partitions of the versions this node serves,
// for the coordinator's re-replication and rebalancing (storaged/replica).
func (m *Manager) Replicas() *replica.Set { return m.replicas }
