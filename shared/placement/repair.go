package placement

import (
	"slices"
	"sort"
)

// Repair, Rebalance and Trim are the coordinator's moves from one
// placement to the next (storaged/coordinator's leader applies them to
// each version's assignment); Gone and Idle name the shards they act on.

// Repair gives the copies that cur places on shards no longer live to
// live shards, moving nothing else: a partition keeps every holder that
// is live or listed in keep (gone, but not for long enough yet), and
// gains, for each copy it lacks up to min(replication, shards), the live
// shard that holds the fewest copies (ties go to the higher rendezvous
// score, so the choice is the same on every run). Only the lost copies
// move, which is the least movement a repair can make.
func Repair(cur Placement, live []string, replication int, keep ...string) Placement {
	ids := DistinctSorted(live)
	kept := map[string]bool{}
	for _, id := range ids {
		kept[id] = true
	}
	for _, id := range keep {
		kept[id] = true
	}
	want := min(replication, len(kept))
	next := make(Placement, len(cur))
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
					(load[id] == load[best] && Score(id, p) > Score(best, p)) {
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
// and nothing else moves (see Rendezvous).
func Rebalance(cur Placement, live []string, replication int) Placement {
	return Rendezvous{}.Place(live, len(cur), replication, cur)
}

// Trim drops the copies beyond replication of every partition, each
// time from the holder with the most copies (ties: the lower rendezvous
// score), so surplus copies leave the fullest nodes. A node that joined
// and loaded a share by itself keeps it.
func Trim(cur Placement, replication int) Placement {
	load := Load(cur)
	next := make(Placement, len(cur))
	for p, hs := range cur {
		hs = DistinctSorted(hs)
		for len(hs) > replication {
			worst := 0
			for i, h := range hs {
				w := hs[worst]
				if load[h] > load[w] || (load[h] == load[w] && Score(h, p) < Score(w, p)) {
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
func Gone(cur Placement, live []string) []string {
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
func Idle(cur Placement, live []string) []string {
	load := Load(cur)
	var idle []string
	for _, id := range DistinctSorted(live) {
		if load[id] == 0 {
			idle = append(idle, id)
		}
	}
	return idle
}

// Equal reports whether a and b give every partition the same holders,
// in whatever order.
func Equal(a, b Placement) bool {
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
