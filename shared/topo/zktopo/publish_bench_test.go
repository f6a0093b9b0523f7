package zktopo

import (
	"fmt"
	"testing"

	"spangle/shared/topo"
)

// benchCache is what the watch loop holds for dbs dbs of two versions of
// 8 partitions on three nodes, two replicas each.
func benchCache(dbs int) *cache {
	ca := &cache{nodes: map[string]topo.Node{}, dbs: map[string]map[string]*versionCache{}, pins: map[string]topo.Pin{},
		listedNodes: true, listedDBs: true}
	addrs := []string{"10.0.0.1:9599", "10.0.0.2:9599", "10.0.0.3:9599"}
	for _, a := range addrs {
		ca.nodes[a+"@"+a] = topo.Node{Addr: a, ShardID: a}
	}
	for i := 0; i < dbs; i++ {
		db := fmt.Sprintf("db-%04d", i)
		ca.dbs[db] = map[string]*versionCache{}
		for _, v := range []string{"v1", "v2"} {
			vc := &versionCache{info: topo.VersionInfo{NumPartitions: 8}}
			for p := 0; p < 8; p++ {
				vc.replicas = append(vc.replicas, topo.ReplicaName(p, addrs[(i+p)%3]), topo.ReplicaName(p, addrs[(i+p+1)%3]))
			}
			ca.dbs[db][v] = vc
		}
	}
	return ca
}

// BenchmarkPublishOneDBChanged is the map work of one change: a replica
// of one db's partition registered, then the map published.
func BenchmarkPublishOneDBChanged(b *testing.B) {
	for _, dbs := range []int{10, 100, 500, 5000} {
		b.Run(fmt.Sprintf("dbs=%d", dbs), func(b *testing.B) {
			c := &Conn{mir: topo.NewMirror()}
			ca := benchCache(dbs)
			c.publishMap(ca)
			vc := ca.dbs["db-0003"]["v2"]
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				// One replica comes and goes: every round is a change.
				if i%2 == 0 {
					vc.replicas = append(vc.replicas, topo.ReplicaName(7, "10.0.0.9:9599"))
				} else {
					vc.replicas = vc.replicas[:len(vc.replicas)-1]
				}
				ca.markDB("db-0003")
				c.publishMap(ca)
			}
		})
	}
}
