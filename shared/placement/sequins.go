package placement

import "sort"

// Sequins is the seed's round-robin deal: Assign gives one shard's
// partitions, Holders every partition's shards. It ignores prev, so it
// reshuffles most copies on any membership change; it is the default
// because it is what sequins clusters already do.
type Sequins struct{}

// Name returns "sequins".
func (Sequins) Name() string { return "sequins" }

// Place returns Holders(shards, partitions, replication).
func (Sequins) Place(shards []string, partitions, replication int, _ Placement) Placement {
	if partitions <= 0 {
		return Placement{}
	}
	if replication <= 0 {
		return make(Placement, partitions)
	}
	return Placement(Holders(shards, partitions, replication))
}

// Assign returns, for the shard id self, the partitions it holds under the
// seed's round-robin rule: the list of partitions 0..n-1, each repeated
// replication times, is dealt over the sorted distinct shard ids, and the
// copy at index i goes to shard i % len(shards).
//
// When there are fewer shards than replication, a shard would be dealt the
// same partition twice; it holds it once. The result is sorted and holds
// no duplicates. A shard not in shards holds nothing.
func Assign(self string, shards []string, n, replication int) []int {
	ids := DistinctSorted(shards)
	pos := sort.SearchStrings(ids, self)
	if pos == len(ids) || ids[pos] != self || n <= 0 || replication <= 0 {
		return nil
	}
	var held []int
	for p := 0; p < n; p++ {
		for r := 0; r < replication; r++ {
			if (p*replication+r)%len(ids) == pos {
				held = append(held, p)
				break
			}
		}
	}
	return held
}

// Holders returns, for each partition, the shard ids Assign gives it.
func Holders(shards []string, n, replication int) [][]string {
	ids := DistinctSorted(shards)
	out := make([][]string, n)
	if len(ids) == 0 {
		return out
	}
	for p := 0; p < n; p++ {
		for r := 0; r < replication; r++ {
			id := ids[(p*replication+r)%len(ids)]
			if !contains(out[p], id) {
				out[p] = append(out[p], id)
			}
		}
	}
	return out
}

// DistinctSorted returns the distinct values of ids in ascending order.
func DistinctSorted(ids []string) []string {
	out := append([]string(nil), ids...)
	sort.Strings(out)
	w := 0
	for i, id := range out {
		if i == 0 || id != out[w-1] {
			out[w] = id
			w++
		}
	}
	return out[:w]
}
