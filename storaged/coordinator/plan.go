package coordinator

import (
	"slices"
	"sort"

	"spangle/shared/placement"
	"spangle/shared/topo"
)

// Repair gives the copies that cur places on shards no longer live to
// live shards, moving nothing else: a partition keeps every holder that
// is live or listed in keep (gone, but not for long enough yet), and
// gains, for each copy it lacks up to min(replication, shards), the live
// shard that holds the fewest copies (ties go to the higher rendezvous
// score, so the choice is the same on every run). Only the lost copies
// move, which is the least movement a repair can make.
func Repair(cur placement.Placement, live []string, replication int, keep ...string) placement.Placement {
	ids := dedup(live)
	kept := map[string]bool{}
	for _, id := range ids {
		kept[id] = true
	}
	for _, id := range keep {
		kept[id] = true
	}
	want := min(replication, len(kept))
	next := make(placement.Placement, len(cur))
	load := map[string]int{}
	for p, hs := range cur {
		for _, h := range hs {
			if kept[h] && !slices.Contains(next[p], h) {
				next[p] = append(next[p], h)
				load[h]++
			}
		}
	}
	for p := range next {
		for len(next[p]) < want {
			best := ""
			for _, id := range ids {
				if slices.Contains(next[p], id) {
					continue
				}
				if best == "" || load[id] < load[best] ||
					(load[id] == load[best] && placement.Score(id, p) > placement.Score(best, p)) {
					best = id
				}
			}
			if best == "" {
				break // every live shard holds it already
			}
			next[p] = append(next[p], best)
			load[best]++
		}
	}
	return next
}

// Rebalance places the copies again over live with the rendezvous
// strategy, starting from cur: a shard that joined takes its fair share
// and nothing else moves (see placement.Rendezvous).
func Rebalance(cur placement.Placement, live []string, replication int) placement.Placement {
	return placement.Rendezvous{}.Place(live, len(cur), replication, cur)
}

// Trim drops the copies beyond replication of every partition, each
// time from the holder with the most copies (ties: the lower rendezvous
// score), so surplus copies leave the fullest nodes. A node that joined
// and loaded a share by itself keeps it.
func Trim(cur placement.Placement, replication int) placement.Placement {
	load := placement.Load(cur)
	next := make(placement.Placement, len(cur))
	for p, hs := range cur {
		hs = dedup(hs)
		for len(hs) > replication {
			worst := 0
			for i, h := range hs {
				w := hs[worst]
				if load[h] > load[w] || (load[h] == load[w] && placement.Score(h, p) < placement.Score(w, p)) {
					worst = i
				}
			}
			load[hs[worst]]--
			hs = append(hs[:worst:worst], hs[worst+1:]...)
		}
		next[p] = hs
	}
	return next
}

// Gone returns the shard ids that cur places copies on and that are not
// in live, sorted.
func Gone(cur placement.Placement, live []string) []string {
	isLive := map[string]bool{}
	for _, id := range live {
		isLive[id] = true
	}
	seen := map[string]bool{}
	var gone []string
	for _, hs := range cur {
		for _, h := range hs {
			if !isLive[h] && !seen[h] {
				seen[h] = true
				gone = append(gone, h)
			}
		}
	}
	sort.Strings(gone)
	return gone
}

// Idle returns the live shard ids that cur gives no copy to, sorted.
func Idle(cur placement.Placement, live []string) []string {
	load := placement.Load(cur)
	var idle []string
	for _, id := range dedup(live) {
		if load[id] == 0 {
			idle = append(idle, id)
		}
	}
	return idle
}

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

func dedup(ids []string) []string {
	out := append([]string(nil), ids...)
	sort.Strings(out)
	return slices.Compact(out)
}

func samePlacement(a, b placement.Placement) bool {
	if len(a) != len(b) {
		return false
	}
	for p := range a {
		x, y := append([]string(nil), a[p]...), append([]string(nil), b[p]...)
		sort.Strings(x)
		sort.Strings(y)
		if !slices.Equal(x, y) {
			return false
		}
	}
	return true
}
