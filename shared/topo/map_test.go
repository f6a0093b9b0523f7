package topo

import "testing"

// Build leaves out a version whose partition count is out of bounds
// and allocates nothing for a replica of a partition beyond the bound,
// whatever the backend handed it.
func TestBuildBoundsPartitions(t *testing.T) {
	var b Builder
	b.AddVersion("db", "huge", VersionInfo{NumPartitions: MaxPartitions + 1})
	b.AddVersion("db", "max", VersionInfo{NumPartitions: MaxPartitions})
	b.AddVersion("db", "v1", VersionInfo{NumPartitions: 2})
	b.AddReplica("db", "v1", 1, "a:1")
	b.AddReplica("db", "v1", 1<<20, "a:1")
	b.AddReplica("db", "v1", -1, "a:1")
	m := b.Build(1)
	if m.Version("db", "huge") != nil {
		t.Error("a version of more than MaxPartitions partitions is in the map")
	}
	if v := m.Version("db", "max"); v == nil || len(v.Replicas) != MaxPartitions {
		t.Errorf("a version of MaxPartitions partitions: %v", v != nil)
	}
	if n := testing.AllocsPerRun(10, func() {
		var b Builder
		b.AddReplica("db", "v1", 1<<20, "a:1")
	}); n > 0 {
		t.Errorf("a replica of partition 2^20 allocated %v times", n)
	}
	v := m.Version("db", "v1")
	if v == nil || len(v.Replicas) != 2 || len(v.Replicas[1]) != 1 {
		t.Fatalf("db/v1 = %+v", v)
	}
}
