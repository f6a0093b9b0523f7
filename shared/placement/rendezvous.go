package placement

import "sort"

// Rendezvous is highest-random-weight hashing with bounded load. Each
// partition ranks the live shard ids by Score and prefers its top
// replication of them; no shard holds more than MaxLoad copies, so a
// partition whose favourite shards are full goes to the next ones.
//
// Given a previous placement it moves as little as it can:
//   - copies on live shards stay, unless a partition has more holders than
//     the replication (the lowest-scoring go) or a shard is over the bound
//     (it sheds its lowest-scoring copies);
//   - missing copies (a shard left, or was shedding) go first to joining
//     shards, then to the highest-scoring shard with room;
//   - a joining shard, one holding nothing in prev, then takes the
//     partitions where it ranks in the top replication, most preferred
//     first, from the lowest-scoring holder outside that top, until it has
//     its fair share (floor of the mean) of copies.
//
// So a leave moves exactly the lost copies, and a join moves about the new
// shard's fair share; Simulate measures both. With no previous copies it
// is plain bounded-load rendezvous, partition by partition in order.
//
// The first holder of each partition in the result is its highest-scoring
// holder, which callers can use as the partition's primary.
type Rendezvous struct{}

// Name returns "rendezvous".
func (Rendezvous) Name() string { return "rendezvous" }

// MaxLoad is the most copies Rendezvous puts on one shard:
// ceil(1.1 × mean), the mean being partitions × min(replication, shards)
// copies over the distinct shards. It is exported so callers and tests
// check the same bound. It is 0 when there is nothing to place.
func MaxLoad(shards, partitions, replication int) int {
	if shards <= 0 || partitions <= 0 || replication <= 0 {
		return 0
	}
	total := partitions * min(replication, shards)
	// ceil(11*total / (10*shards)) in integers, so no float rounding can
	// make the bound disagree between processes.
	return (11*total + 10*shards - 1) / (10 * shards)
}

// Score is the weight of shard id for a partition: FNV-1a 64 of the id,
// combined with the partition and finished with the splitmix64 mixer. It
// is fixed across processes and releases (unlike hash/maphash), because
// every node must rank shards the same way.
func Score(id string, partition int) uint64 {
	return mixScore(idHash(id), partition)
}

func idHash(id string) uint64 {
	const (
		offset = 14695981039346656037
		prime  = 1099511628211
	)
	h := uint64(offset)
	for i := 0; i < len(id); i++ {
		h ^= uint64(id[i])
		h *= prime
	}
	return h
}

func mixScore(idh uint64, partition int) uint64 {
	return splitmix64(idh ^ splitmix64(uint64(partition)))
}

func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// Place returns the bounded-load rendezvous placement, keeping what it can
// of prev (see the type's comment).
func (Rendezvous) Place(shards []string, partitions, replication int, prev Placement) Placement {
	if partitions <= 0 {
		return Placement{}
	}
	ids := DistinctSorted(shards)
	if len(ids) == 0 || replication <= 0 {
		return make(Placement, partitions)
	}
	s := newState(ids, partitions, min(replication, len(ids)))
	s.keep(prev)
	s.markJoining()
	s.shed()
	s.fill()
	s.promote()
	return s.result()
}

// state is one Place computation over shard indexes into ids. It is not
// shared between goroutines.
type state struct {
	ids     []string
	hash    []uint64 // idHash of each id
	r, cap  int      // holders per partition; MaxLoad
	holders [][]int  // per partition, shard indexes
	load    []int    // copies per shard
	intake  []int    // copies a joining shard may still take; 0 otherwise
	joining []bool
	topR    [][]int // per partition, its top r shards by score; lazily built
}

func newState(ids []string, partitions, r int) *state {
	s := &state{
		ids:     ids,
		hash:    make([]uint64, len(ids)),
		r:       r,
		cap:     MaxLoad(len(ids), partitions, r),
		holders: make([][]int, partitions),
		load:    make([]int, len(ids)),
		intake:  make([]int, len(ids)),
		joining: make([]bool, len(ids)),
		topR:    make([][]int, partitions),
	}
	for i, id := range ids {
		s.hash[i] = idHash(id)
	}
	return s
}

func (s *state) score(shard, p int) uint64 { return mixScore(s.hash[shard], p) }

// better orders shards for partition p: higher score first, then lower
// index, so ties (practically absent) still resolve the same everywhere.
func (s *state) better(a, b, p int) bool {
	sa, sb := s.score(a, p), s.score(b, p)
	if sa != sb {
		return sa > sb
	}
	return a < b
}

func (s *state) holds(shard, p int) bool {
	for _, h := range s.holders[p] {
		if h == shard {
			return true
		}
	}
	return false
}

func (s *state) add(shard, p int) {
	s.holders[p] = append(s.holders[p], shard)
	s.load[shard]++
	if s.intake[shard] > 0 {
		s.intake[shard]--
	}
}

func (s *state) remove(shard, p int) {
	hs := s.holders[p]
	for i, h := range hs {
		if h == shard {
			s.holders[p] = append(hs[:i], hs[i+1:]...)
			s.load[shard]--
			return
		}
	}
}

// keep copies prev's live holders, at most r per partition, the
// highest-scoring when there are more.
func (s *state) keep(prev Placement) {
	for p := range s.holders {
		if p >= len(prev) {
			break
		}
		var hs []int
		for _, id := range prev[p] {
			i := sort.SearchStrings(s.ids, id)
			if i < len(s.ids) && s.ids[i] == id && !containsInt(hs, i) {
				hs = append(hs, i)
			}
		}
		if len(hs) > s.r {
			sort.Slice(hs, func(a, b int) bool { return s.better(hs[a], hs[b], p) })
			hs = hs[:s.r]
		}
		for _, i := range hs {
			s.holders[p] = append(s.holders[p], i)
			s.load[i]++
		}
	}
}

// markJoining marks the shards holding nothing as joining. With no copies
// kept at all every shard is joining and may fill up to the bound, which
// makes Place plain bounded-load rendezvous; otherwise a joining shard
// takes at most the floor of the mean, so a join moves no more than the
// newcomer's fair share plus what over-full shards must shed.
func (s *state) markJoining() {
	kept := 0
	for _, l := range s.load {
		kept += l
	}
	share := s.cap
	if kept > 0 {
		share = min(s.cap, len(s.holders)*s.r/len(s.ids))
	}
	for i, l := range s.load {
		if l == 0 {
			s.joining[i] = true
			s.intake[i] = share
		}
	}
}

// shed drops the lowest-scoring copies of every shard above the bound; a
// join lowers the bound, so this is where a join takes from full shards.
func (s *state) shed() {
	for i, l := range s.load {
		if l <= s.cap {
			continue
		}
		var ps []int
		for p, hs := range s.holders {
			if containsInt(hs, i) {
				ps = append(ps, p)
			}
		}
		sort.Slice(ps, func(a, b int) bool {
			sa, sb := s.score(i, ps[a]), s.score(i, ps[b])
			if sa != sb {
				return sa < sb
			}
			return ps[a] < ps[b]
		})
		for _, p := range ps[:l-s.cap] {
			s.remove(i, p)
		}
	}
}

// fill gives every partition r holders: a joining shard with intake left
// first, else the highest-scoring shard with room.
func (s *state) fill() {
	for p := range s.holders {
		for len(s.holders[p]) < s.r {
			best := s.pick(p, true)
			if best < 0 {
				best = s.pick(p, false)
			}
			if best < 0 {
				best = s.swapRoom(p)
			}
			s.add(best, p)
		}
	}
}

// pick returns the best shard with room that does not hold p, among the
// joining shards with intake left if joiningOnly; -1 if there is none.
func (s *state) pick(p int, joiningOnly bool) int {
	best := -1
	for i := range s.ids {
		if s.load[i] >= s.cap || s.holds(i, p) || (joiningOnly && s.intake[i] == 0) {
			continue
		}
		if best < 0 || s.better(i, best, p) {
			best = i
		}
	}
	return best
}

// swapRoom frees a slot for p when every shard with room already holds
// it. Such a shard a exists (cap × shards >= copies) and holds fewer
// partitions than a full shard b that lacks p, so some partition q is on
// b but not on a: q moves from b to a, and b returns free for p.
func (s *state) swapRoom(p int) int {
	a := -1
	for i := range s.ids {
		if s.load[i] < s.cap {
			a = i
			break
		}
	}
	for b := range s.ids {
		if s.holds(b, p) {
			continue
		}
		for q := range s.holders {
			if q != p && s.holds(b, q) && !s.holds(a, q) {
				s.remove(b, q)
				s.add(a, q)
				return b
			}
		}
	}
	panic("placement: no room for a copy; the load bound is wrong")
}

// promote lets each joining shard take the partitions where it ranks in
// the top r, from their lowest-scoring holder outside that top, most
// preferred partition first, while it has intake and room.
func (s *state) promote() {
	for i := range s.ids {
		if !s.joining[i] || s.intake[i] == 0 || s.load[i] >= s.cap {
			continue
		}
		var ps []int
		for p := range s.holders {
			if !s.holds(i, p) && containsInt(s.top(p), i) {
				ps = append(ps, p)
			}
		}
		sort.Slice(ps, func(a, b int) bool {
			sa, sb := s.score(i, ps[a]), s.score(i, ps[b])
			if sa != sb {
				return sa > sb
			}
			return ps[a] < ps[b]
		})
		for _, p := range ps {
			if s.intake[i] == 0 || s.load[i] >= s.cap {
				break
			}
			out := -1
			for _, h := range s.holders[p] {
				if !containsInt(s.top(p), h) && (out < 0 || s.better(out, h, p)) {
					out = h
				}
			}
			if out >= 0 {
				s.remove(out, p)
				s.add(i, p)
			}
		}
	}
}

// top returns partition p's r highest-scoring shards.
func (s *state) top(p int) []int {
	if s.topR[p] != nil {
		return s.topR[p]
	}
	t := make([]int, 0, s.r+1)
	for i := range s.ids {
		j := len(t)
		for j > 0 && s.better(i, t[j-1], p) {
			j--
		}
		if j < s.r {
			t = append(t, 0)
			copy(t[j+1:], t[j:])
			t[j] = i
			if len(t) > s.r {
				t = t[:s.r]
			}
		}
	}
	s.topR[p] = t
	return t
}

// result turns shard indexes back into ids, each partition's holders in
// descending score order.
func (s *state) result() Placement {
	out := make(Placement, len(s.holders))
	for p, hs := range s.holders {
		sort.Slice(hs, func(a, b int) bool { return s.better(hs[a], hs[b], p) })
		ids := make([]string, len(hs))
		for k, i := range hs {
			ids[k] = s.ids[i]
		}
		out[p] = ids
	}
	return out
}

func containsInt(list []int, v int) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}
