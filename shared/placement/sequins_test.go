package placement

import (
	"fmt"
	"reflect"
	"testing"
)

func TestAssignBalance(t *testing.T) {
	for _, nodes := range []int{1, 2, 3, 4, 5, 7, 10} {
		for _, n := range []int{1, 5, 8, 64} {
			for _, repl := range []int{1, 2, 3} {
				var shards []string
				for i := 0; i < nodes; i++ {
					shards = append(shards, fmt.Sprintf("node-%02d", i))
				}
				lo, hi := n*repl, 0
				copies := make([]int, n)
				for _, s := range shards {
					held := Assign(s, shards, n, repl)
					if len(held) < lo {
						lo = len(held)
					}
					if len(held) > hi {
						hi = len(held)
					}
					for _, p := range held {
						copies[p]++
					}
				}
				if hi-lo > 1 {
					t.Errorf("nodes=%d n=%d repl=%d: copies per node %d..%d differ by more than 1", nodes, n, repl, lo, hi)
				}
				want := repl
				if nodes < repl {
					want = nodes
				}
				for p, c := range copies {
					if c != want {
						t.Errorf("nodes=%d n=%d repl=%d: partition %d has %d holders, want %d", nodes, n, repl, p, c, want)
					}
				}
			}
		}
	}
}

func TestAssignSharedShardIDs(t *testing.T) {
	// Two processes with shard id "a" hold the same partitions: the shard
	// list has duplicates, and both compute from the distinct ids.
	shards := []string{"b", "a", "c", "a"}
	got := Assign("a", shards, 8, 2)
	want := Assign("a", []string{"a", "b", "c"}, 8, 2)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Assign with duplicate shard ids = %v, want %v", got, want)
	}
	if want := []int{0, 1, 3, 4, 6, 7}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Assign(a) = %v, want %v", got, want)
	}
	if got := Assign("zzz", shards, 8, 2); got != nil {
		t.Fatalf("unknown shard holds %v", got)
	}
}

func TestHoldersAgreesWithAssign(t *testing.T) {
	shards := []string{"s1", "s2", "s3"}
	holders := Holders(shards, 8, 2)
	for _, s := range shards {
		for _, p := range Assign(s, shards, 8, 2) {
			found := false
			for _, h := range holders[p] {
				found = found || h == s
			}
			if !found {
				t.Fatalf("Holders[%d] = %v lacks %s", p, holders[p], s)
			}
		}
	}
}
