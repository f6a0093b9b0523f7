package topo

import (
	"sort"
)

// Map is one immutable snapshot of the cluster as a process last saw it.
// Nobody modifies a Map after it is published, so it may be shared freely
// between goroutines; a change makes a new Map with a greater Revision.
type Map struct {
	// Revision increases with every change this process observes. It is
	// local to the process: two processes' revisions are not comparable.
	Revision uint64 `json:"revision"`
	// Nodes holds the live storaged nodes by address.
	Nodes map[string]Node `json:"nodes"`
	// DBs holds, per db, its versions by name.
	DBs map[string]map[string]*Version `json:"dbs"`
	// Pins holds the pins the leader published (pins/<db>), an unpin
	// included (Version ""), so that its generation stays known. nil when
	// none was ever published.
	Pins map[string]Pin `json:"pins,omitempty"`
	// PinErrors holds, per db, why the nodes do not follow its _PIN
	// marker (a missing version, a malformed marker), so that a router's
	// status shows it too. Only static discovery fills it, from the
	// nodes' status pages; nil when no node reports one.
	PinErrors map[string]string `json:"pin_errors,omitempty"`
}

// Version is where one version's partitions live.
type Version struct {
	VersionInfo
	// Replicas holds, per partition, the sorted addresses that serve it.
	// Its length is NumPartitions; a partition nobody serves is empty.
	Replicas [][]string `json:"replicas"`
}

// EmptyMap is the map before anything is known.
func EmptyMap() *Map {
	return &Map{Nodes: map[string]Node{}, DBs: map[string]map[string]*Version{}}
}

// Complete reports whether every partition has at least minReplication
// replicas, which is when clients may be switched to the version.
func (v *Version) Complete(minReplication int) bool {
	if v == nil || v.NumPartitions <= 0 || len(v.Replicas) != v.NumPartitions {
		return false
	}
	if minReplication < 1 {
		minReplication = 1
	}
	for _, r := range v.Replicas {
		if len(r) < minReplication {
			return false
		}
	}
	return true
}

// Version returns the named version, or nil.
func (m *Map) Version(db, version string) *Version {
	return m.DBs[db][version]
}

// Replicas returns the addresses serving one partition, or nil.
func (m *Map) Replicas(db, version string, partition int) []string {
	v := m.Version(db, version)
	if v == nil || partition < 0 || partition >= len(v.Replicas) {
		return nil
	}
	return v.Replicas[partition]
}

// NewestComplete returns the greatest version name of db that is complete
// under minReplication, or "" when none is.
func (m *Map) NewestComplete(db string, minReplication int) string {
	best := ""
	for name, v := range m.DBs[db] {
		if name > best && v.Complete(minReplication) {
			best = name
		}
	}
	return best
}

// DBNames returns the db names in order.
func (m *Map) DBNames() []string {
	names := make([]string, 0, len(m.DBs))
	for db := range m.DBs {
		names = append(names, db)
	}
	sort.Strings(names)
	return names
}

// VersionNames returns db's version names in order, oldest first.
func (m *Map) VersionNames(db string) []string {
	names := make([]string, 0, len(m.DBs[db]))
	for v := range m.DBs[db] {
		names = append(names, v)
	}
	sort.Strings(names)
	return names
}

// ShardIDs returns the shard ids of the live nodes, sorted and distinct.
func (m *Map) ShardIDs() []string {
	seen := map[string]bool{}
	var ids []string
	for _, n := range m.Nodes {
		if !seen[n.ShardID] {
			seen[n.ShardID] = true
			ids = append(ids, n.ShardID)
		}
	}
	sort.Strings(ids)
	return ids
}

// Builder assembles a Map from what a backend has listed. The zero value
// is ready to use; Build may be called once.
type Builder struct {
	m *Map
}

func (b *Builder) init() {
	if b.m == nil {
		b.m = EmptyMap()
	}
}

// AddNode records a live node.
func (b *Builder) AddNode(n Node) {
	b.init()
	b.m.Nodes[n.Addr] = n
}

// AddVersion records a version and its partition count. Replicas added
// before or after are kept.
func (b *Builder) AddVersion(db, version string, info VersionInfo) {
	b.init()
	v := b.version(db, version)
	v.VersionInfo = info
}

// AddReplica records that addr serves a partition. Replicas of partitions
// beyond the version's count are dropped at Build; a partition not
// within [0, MaxPartitions) is dropped at once, before anything is
// allocated for it.
func (b *Builder) AddReplica(db, version string, partition int, addr string) {
	if partition < 0 || partition >= MaxPartitions {
		return
	}
	b.init()
	v := b.version(db, version)
	for len(v.Replicas) <= partition {
		v.Replicas = append(v.Replicas, nil)
	}
	v.Replicas[partition] = append(v.Replicas[partition], addr)
}

func (b *Builder) version(db, version string) *Version {
	vs := b.m.DBs[db]
	if vs == nil {
		vs = map[string]*Version{}
		b.m.DBs[db] = vs
	}
	v := vs[version]
	if v == nil {
		v = &Version{}
		vs[version] = v
	}
	return v
}

// Build returns the map with revision rev. Versions whose partition count
// is unknown or not within [1, MaxPartitions] are left out; replica
// lists are sorted and deduplicated.
func (b *Builder) Build(rev uint64) *Map {
	b.init()
	m := b.m
	b.m = nil
	m.Revision = rev
	for db, vs := range m.DBs {
		for name, v := range vs {
			if CheckVersionInfo(v.VersionInfo) != nil {
				delete(vs, name)
				continue
			}
			reps := make([][]string, v.NumPartitions)
			for p := range reps {
				if p < len(v.Replicas) {
					reps[p] = dedupSorted(v.Replicas[p])
				}
			}
			v.Replicas = reps
		}
		if len(vs) == 0 {
			delete(m.DBs, db)
		}
	}
	return m
}

func dedupSorted(s []string) []string {
	sort.Strings(s)
	w := 0
	for i, v := range s {
		if i == 0 || v != s[w-1] {
			s[w] = v
			w++
		}
	}
	return s[:w]
}
