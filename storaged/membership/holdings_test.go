package membership

import (
	"context"
	"reflect"
	"slices"
	"testing"

	"spangle/shared/placement"
	"spangle/shared/topo"
	"spangle/shared/topo/memtopo"
)

// holdings takes the coordinator's assignment whole when there is one;
// otherwise the strategy's answer less the partitions already at
// MaxReplication live replicas on other nodes.
func TestHoldingsSteps(t *testing.T) {
	const n, repl = 8, 2
	self, others := "10.0.0.1:1", []string{"10.0.0.2:1", "10.0.0.3:1"}
	shards := append([]string{self}, others...)
	for _, st := range []placement.Strategy{nil, placement.Rendezvous{}} {
		dealt := placement.Held(st, self, shards, n, repl)
		if len(dealt) < 2 {
			t.Fatalf("%v deals %s only %v", st, self, dealt)
		}
		// The first partition dealt to self is served by both others,
		// the second by one other and self.
		full, half := dealt[0], dealt[1]
		m := topo.EmptyMap()
		for _, a := range shards {
			m.Nodes[a] = topo.Node{ID: "id-" + a, ShardID: a, Addr: a}
		}
		v := &topo.Version{VersionInfo: topo.VersionInfo{NumPartitions: n}, Replicas: make([][]string, n)}
		v.Replicas[full] = others
		v.Replicas[half] = []string{self, others[0]}
		m.DBs["db"] = map[string]*topo.Version{"v1": v}

		var assigned func(ctx context.Context, db, version string, n int) ([]int, bool)
		c, err := New(Options{
			Conn: memtopo.NewServer().Conn(), Node: topo.Node{ID: "id", ShardID: self, Addr: self},
			Replication: repl, MaxReplication: 2, Strategy: st,
			Assigned: func(ctx context.Context, db, version string, n int) ([]int, bool) {
				return assigned(ctx, db, version, n)
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()

		// No assignment: the strategy's answer, filtered.
		assigned = func(context.Context, string, string, int) ([]int, bool) { return nil, false }
		want := slices.DeleteFunc(slices.Clone(dealt), func(p int) bool { return p == full })
		if got := c.holdings(ctx, m, "db", "v1", n); !reflect.DeepEqual(got, want) {
			t.Errorf("%v, no assignment: holdings = %v, want %v (dealt %v, %d full)", st, got, want, dealt, full)
		}
		// An assignment is taken whole, the full partition included.
		assigned = func(_ context.Context, db, version string, np int) ([]int, bool) {
			if db != "db" || version != "v1" || np != n {
				t.Errorf("Assigned(%s, %s, %d)", db, version, np)
			}
			return []int{full, n - 1}, true
		}
		if got := c.holdings(ctx, m, "db", "v1", n); !reflect.DeepEqual(got, []int{full, n - 1}) {
			t.Errorf("%v, assigned: holdings = %v, want %v", st, got, []int{full, n - 1})
		}
	}
}
