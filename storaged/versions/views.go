package versions

import (
	"sort"
	"spangle/shared/dbver"
	"spangle/shared/parquetkv"
	"spangle/shared/source"
	"spangle/shared/wire"
	"time"
)

// Views is the read-only side of a Manager: what the status page,
// /healthz, the daemon's holder and the partition copies between nodes
// read. Each call takes the manager's lock for a moment (or none) and
// changes nothing, so that the Manager's own methods are its lifecycle.
type Views struct{ m *Manager }

// Views returns m's read-only views.
func (m *Manager) Views() Views { return Views{m} }

// Health returns every known version's state: {"<db>": {"<version>": ...}}.
func (vw Views) Health() map[string]map[string]wire.Health {
	m := vw.m
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	out := map[string]map[string]wire.Health{}
	for db, d := range m.dbs {
		vs := map[string]wire.Health{}
		for name, v := range d.versions {
			h := wire.Health{State: healthState(v.phase), Reason: v.reason, Progress: progressOf(v, now)}
			if v.phase == loaded {
				h.Reason = "loaded; waiting to become active"
			}
			if bad, why := m.rep.Corrupt(dbver.Of(db, name)); bad != nil {
				h.CorruptPartitions = bad
				h.Reason = joinReasons(h.Reason, why)
			}
			vs[name] = h
		}
		ps := m.plan.Status(db)
		names, why := heldBack(d, ps)
		for _, name := range names {
			vs[name] = wire.Health{State: wire.StateHeld, Reason: why}
		}
		for name, why := range ps.Awaiting {
			if d.versions[name] == nil {
				vs[name] = wire.Health{State: wire.StateBuilding, Reason: why}
			}
		}
		for name, s := range ps.Settling {
			why := s.Reason
			if h, ok := vs[name]; ok {
				h.Reason = joinReasons(h.Reason, "its source files changed; "+why)
				vs[name] = h
			} else {
				vs[name] = wire.Health{State: wire.StateSettling, Reason: why}
			}
		}
		if why := pinReason(d, ps); why != "" {
			// A marker not followed is an error of the db, shown under
			// the marker's name, which no version can have.
			vs[source.PinFile] = wire.Health{State: wire.StateError, Reason: why}
		}
		if why := ps.FormatError; why != "" {
			vs[parquetkv.FormatFile] = wire.Health{State: wire.StateError, Reason: why}
		}
		out[db] = vs
	}
	return out
}

// Status returns the status page's view of every db, or of one when db
// is not "".
func (vw Views) Status(db string) map[string]wire.DBStatus {
	m := vw.m
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	out := map[string]wire.DBStatus{}
	for name, d := range m.dbs {
		if db != "" && name != db {
			continue
		}
		ds := wire.DBStatus{Current: d.current, Versions: map[string]wire.VersionStatus{}}
		ps := m.plan.Status(name)
		ds.Pin, ds.PinGeneration, ds.PinError = ps.Pin, ps.PinGeneration, pinReason(d, ps)
		ds.FormatError = ps.FormatError
		if cur := d.versions[d.current]; cur == nil || cur.phase != active {
			ds.Current = ""
		}
		for vname, vs := range d.versions {
			st := wire.VersionStatus{State: healthState(vs.phase), Reason: vs.reason,
				NumPartitions: numPartitions(vs.files, m.build.Formats(name)), Partitions: []int{},
				LoadSeconds: vs.loadTook.Seconds(), Activated: vs.activated, Progress: progressOf(vs, now)}
			if vs.v != nil {
				st.Partitions = vs.v.Held()
				st.Created = vs.v.Created
			}
			if bad, why := m.rep.Corrupt(dbver.Of(name, vname)); bad != nil {
				st.CorruptPartitions = bad
				st.Reason = joinReasons(st.Reason, why)
			}
			ds.Versions[vname] = st
		}
		names, why := heldBack(d, ps)
		for _, vname := range names {
			ds.Versions[vname] = wire.VersionStatus{State: wire.StateHeld, Reason: why, Partitions: []int{}}
		}
		for vname, why := range ps.Awaiting {
			if d.versions[vname] == nil {
				ds.Versions[vname] = wire.VersionStatus{State: wire.StateBuilding, Reason: why, Partitions: []int{}}
			}
		}
		for vname, s := range ps.Settling {
			why := s.Reason
			if st, ok := ds.Versions[vname]; ok {
				st.Reason = joinReasons(st.Reason, "its source files changed; "+why)
				ds.Versions[vname] = st
			} else {
				ds.Versions[vname] = wire.VersionStatus{State: wire.StateSettling, Reason: why,
					NumPartitions: numPartitions(s.Files, m.build.Formats(name)), Partitions: []int{}}
			}
		}
		out[name] = ds
	}
	return out
}

// DBNames returns the dbs the manager knows, sorted.
func (vw Views) DBNames() []string {
	m := vw.m
	m.mu.Lock()
	defer m.mu.Unlock()
	names := make([]string, 0, len(m.dbs))
	for db := range m.dbs {
		names = append(names, db)
	}
	sort.Strings(names)
	return names
}

// SourceStatus says whether the last listing of the source root worked
// and, if not, why and since when: an unreachable S3 store or a wrong
// credential shows on the status page and /healthz, not only in the log.
func (vw Views) SourceStatus() wire.SourceStatus {
	m := vw.m
	m.source.mu.Lock()
	defer m.source.mu.Unlock()
	return wire.SourceStatus{Root: m.opts.Source.String(), Error: m.source.err, Since: m.source.since}
}

// Counts returns how many versions were loaded from the source, reused
// from the local store, and failed, since New.
func (vw Views) Counts() (loaded, reused, failed int64) {
	m := vw.m
	return m.loadedN.Load(), m.reusedN.Load(), m.failedN.Load()
}

// HeldPartitions returns the partitions of db/version this node serves,
// ascending; nil when it serves no such version.
func (vw Views) HeldPartitions(db, version string) []int {
	m := vw.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if vs := m.dbs.servable(db, version); vs != nil {
		return vs.v.Held()
	}
	return nil
}

// PartitionDir returns the directory of partition p of db/version when
// this node serves it: its files are immutable, so a peer may copy them.
// A partition found corrupt is not offered until it is rebuilt.
func (vw Views) PartitionDir(p dbver.Partition) (string, bool) {
	m := vw.m
	m.mu.Lock()
	defer m.mu.Unlock()
	vs := m.dbs.servable(p.DB, p.Version)
	if vs == nil || p.P < 0 || p.P >= len(vs.v.parts) || vs.v.parts[p.P] == nil || m.rep.Bad(p) {
		return "", false
	}
	return m.opts.Store.PartitionDir(p), true
}
