package partmap

import (
	"fmt"
	"testing"

	"spangle/shared/topo"
)

// manyDBs is a map of dbs dbs of two complete versions of 8 partitions
// on three nodes, two replicas each.
func manyDBs(dbs int) *topo.Map {
	var b topo.Builder
	addrs := []string{"a:1", "b:1", "c:1"}
	for _, a := range addrs {
		b.AddNode(topo.Node{Addr: a, ShardID: a})
	}
	for i := 0; i < dbs; i++ {
		db := fmt.Sprintf("db-%04d", i)
		for _, v := range []string{"v1", "v2"} {
			b.AddVersion(db, v, topo.VersionInfo{NumPartitions: 8})
			for p := 0; p < 8; p++ {
				b.AddReplica(db, v, p, addrs[(i+p)%3])
				b.AddReplica(db, v, p, addrs[(i+p+1)%3])
			}
		}
	}
	return b.Build(0)
}

// withVersion returns a copy of m sharing every db's versions but db's,
// which gains version v complete: what a backend publishes when one db
// gets a new version.
func withVersion(m *topo.Map, db, v string) *topo.Map {
	next := &topo.Map{Nodes: m.Nodes, DBs: make(map[string]map[string]*topo.Version, len(m.DBs)), Pins: m.Pins}
	for name, vs := range m.DBs {
		next.DBs[name] = vs
	}
	vs := make(map[string]*topo.Version, len(m.DBs[db])+1)
	for name, ver := range m.DBs[db] {
		vs[name] = ver
	}
	vs[v] = m.DBs[db]["v2"]
	next.DBs[db] = vs
	return next
}

// BenchmarkAdvanceOneDBChanged is routerd's work for one db's new
// version: the next State from a map where only that db changed.
func BenchmarkAdvanceOneDBChanged(b *testing.B) {
	for _, dbs := range []int{10, 100, 500, 5000} {
		b.Run(fmt.Sprintf("dbs=%d", dbs), func(b *testing.B) {
			mir := topo.NewMirror()
			m := manyDBs(dbs)
			mir.Publish(m)
			tb := New(mir, Options{})
			tb.Current()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				m = withVersion(m, "db-0003", fmt.Sprintf("w%06d", i))
				mir.Publish(m)
				b.StartTimer()
				if s := tb.Current(); s.Served("db-0003") != fmt.Sprintf("w%06d", i) {
					b.Fatalf("serves %s", s.Served("db-0003"))
				}
			}
		})
	}
}
