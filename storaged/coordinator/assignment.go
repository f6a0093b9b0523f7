package coordinator

import (
	"slices"
	"sort"

	"spangle/shared/placement"
	"spangle/shared/topo"
)

// Published returns, per partition of v, the shard ids of the live nodes
// that publish it in m, sorted.
func Published(m *topo.Map, v *topo.Version) placement.Placement {
	out := make(placement.Placement, len(v.Replicas))
	for p, addrs := range v.Replicas {
		for _, addr := range addrs {
			n, ok := m.Nodes[addr]
			if ok && !slices.Contains(out[p], n.ShardID) {
				out[p] = append(out[p], n.ShardID)
			}
		}
		sort.Strings(out[p])
	}
	return out
}

// Settled reports whether every shard that a placement gives partition p
// publishes it.
func Settled(want []string, published []string) bool {
	for _, id := range want {
		if !slices.Contains(published, id) {
			return false
		}
	}
	return true
}

// InForce returns, per partition, the shard ids that must keep serving
// it while a next assignment replaces a: a's holders, and those a itself
// kept in force for a partition that had not settled yet.
func InForce(a topo.Assignment, published placement.Placement) placement.Placement {
	out := make(placement.Placement, len(a.Replicas))
	for p, hs := range a.Replicas {
		out[p] = append([]string(nil), hs...)
		if p < len(a.Previous) && (p >= len(published) || !Settled(hs, published[p])) {
			for _, h := range a.Previous[p] {
				if !slices.Contains(out[p], h) {
					out[p] = append(out[p], h)
				}
			}
		}
		sort.Strings(out[p])
	}
	return out
}

// Holds reports whether the shard must hold partition p under a: it is
// one of p's holders, or it held p before and some new holder of p has
// not published it yet.
func Holds(a topo.Assignment, published placement.Placement, shard string, p int) bool {
	if p < 0 || p >= len(a.Replicas) {
		return false
	}
	if slices.Contains(a.Replicas[p], shard) {
		return true
	}
	if p >= len(a.Previous) || !slices.Contains(a.Previous[p], shard) {
		return false
	}
	return p >= len(published) || !Settled(a.Replicas[p], published[p])
}

// Pending counts the copies a places that are not published yet: the
// work of an assignment in progress.
func Pending(a topo.Assignment, published placement.Placement) int {
	n := 0
	for p, hs := range a.Replicas {
		for _, h := range hs {
			if p >= len(published) || !slices.Contains(published[p], h) {
				n++
			}
		}
	}
	return n
}
