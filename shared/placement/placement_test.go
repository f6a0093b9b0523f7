package placement

import (
	"fmt"
	"hash/fnv"
	"math/rand"
	"reflect"
	"testing"
)

func TestByName(t *testing.T) {
	for name, want := range map[string]string{"": "sequins", "sequins": "sequins", "rendezvous": "rendezvous"} {
		st, err := ByName(name)
		if err != nil || st.Name() != want {
			t.Errorf("ByName(%q) = %v, %v; want %s", name, st, err, want)
		}
	}
	if _, err := ByName("consistent"); err == nil {
		t.Error("ByName accepted an unknown strategy")
	}
}

func TestSequinsEqualsHolders(t *testing.T) {
	shards := []string{"c", "a", "b", "a", "d"}
	for _, n := range []int{1, 7, 64} {
		for _, r := range []int{1, 2, 3, 6} {
			got := Sequins{}.Place(shards, n, r, Placement{{"zzz"}})
			want := Holders(shards, n, r)
			if !reflect.DeepEqual([][]string(got), want) {
				t.Errorf("n=%d r=%d: Sequins = %v, want %v", n, r, got, want)
			}
		}
	}
}

// Held gives each shard its partitions of the strategy's placement, and
// with no strategy the sequins deal, Assign.
func TestHeld(t *testing.T) {
	shards := []string{"c", "a", "b", "a", "d"}
	for _, st := range []Strategy{nil, Sequins{}, Rendezvous{}} {
		for _, n := range []int{1, 7, 64} {
			for _, r := range []int{1, 2, 3, 6} {
				pl := Holders(shards, n, r)
				if st != nil {
					pl = st.Place(shards, n, r, nil)
				}
				for _, self := range append(shards, "zzz") {
					var want []int
					for p, hs := range pl {
						if contains(hs, self) {
							want = append(want, p)
						}
					}
					if got := Held(st, self, shards, n, r); !reflect.DeepEqual(got, want) {
						t.Errorf("%v n=%d r=%d: Held(%s) = %v, want %v", st, n, r, self, got, want)
					}
					if st == nil || st.Name() == "sequins" {
						if got, assign := Held(st, self, shards, n, r), Assign(self, shards, n, r); !reflect.DeepEqual(got, assign) {
							t.Errorf("%v n=%d r=%d: Held(%s) = %v, Assign = %v", st, n, r, self, got, assign)
						}
					}
				}
			}
		}
	}
}

func TestMovesAndLoad(t *testing.T) {
	prev := Placement{{"a", "b"}, {"b", "c"}}
	next := Placement{{"b", "a"}, {"b", "d"}, {"e"}}
	if got := Moves(prev, next); got != 2 {
		t.Errorf("Moves = %d, want 2 (d on partition 1, e on new partition 2)", got)
	}
	if got := Moves(nil, next); got != 5 {
		t.Errorf("Moves from nothing = %d, want 5", got)
	}
	want := map[string]int{"a": 1, "b": 2, "d": 1, "e": 1}
	if got := Load(next); !reflect.DeepEqual(got, want) {
		t.Errorf("Load = %v, want %v", got, want)
	}
}

func TestMaxLoad(t *testing.T) {
	cases := []struct{ shards, parts, repl, want int }{
		{1000, 512, 3, 2},    // mean 1.536
		{10, 512, 3, 169},    // mean 153.6 -> 168.96
		{3, 512, 3, 564},     // mean 512 -> 563.2
		{2, 512, 3, 564},     // replication capped at 2 shards
		{100, 500, 2, 11},    // mean 10 -> exactly 11
		{0, 512, 3, 0},       // nothing to place
		{4, 0, 3, 0},         //
		{7, 1, 1, 1},         // mean below one
		{1, 5, 3, 6},         // ceil(5.5)
		{10, 100, 1, 11},     // 11 exactly, no float drift
		{1001, 512, 3, 2},    //
		{101, 512, 3, 17},    // mean 15.21 -> 16.73
		{1000, 1000, 1, 2},   // mean 1 -> 1.1
		{1000, 10000, 1, 11}, // mean 10 -> 11
	}
	for _, c := range cases {
		if got := MaxLoad(c.shards, c.parts, c.repl); got != c.want {
			t.Errorf("MaxLoad(%d, %d, %d) = %d, want %d", c.shards, c.parts, c.repl, got, c.want)
		}
	}
}

func TestScoreIsFixed(t *testing.T) {
	// Pinned so a change of hash, which would move every partition of a
	// running cluster, cannot go unnoticed.
	got := []uint64{Score("node-0000", 0), Score("node-0000", 1), Score("10.0.0.1:9599", 511)}
	want := []uint64{0xfb6ba599e91012b0, 0xbfa60aac2978821f, 0x4ea74754eee315d1}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Score changed: got %#x, want %#x", got, want)
	}
}

// checkValid asserts the placement's shape: every partition has
// min(r, shards) distinct holders among shards, and no shard is above
// MaxLoad.
func checkValid(t *testing.T, what string, p Placement, shards []string, parts, r int) {
	t.Helper()
	ids := DistinctSorted(shards)
	if len(p) != parts {
		t.Fatalf("%s: %d partitions, want %d", what, len(p), parts)
	}
	want := min(r, len(ids))
	for i, hs := range p {
		if len(hs) != want {
			t.Fatalf("%s: partition %d has holders %v, want %d", what, i, hs, want)
		}
		seen := map[string]bool{}
		for _, h := range hs {
			if seen[h] || !contains(ids, h) {
				t.Fatalf("%s: partition %d holders %v: duplicate or unknown %q", what, i, hs, h)
			}
			seen[h] = true
		}
	}
	bound := MaxLoad(len(ids), parts, r)
	for id, l := range Load(p) {
		if l > bound {
			t.Fatalf("%s: %s holds %d copies, bound %d", what, id, l, bound)
		}
	}
}

func TestRendezvousValidSmall(t *testing.T) {
	// Exhaustive over small clusters, where the bound is tight and the
	// greedy fill can corner itself (swapRoom).
	rng := rand.New(rand.NewSource(1))
	for n := 1; n <= 8; n++ {
		for parts := 1; parts <= 24; parts++ {
			for r := 1; r <= 5; r++ {
				shards := SimNodes(n)
				base := Rendezvous{}.Place(shards, parts, r, nil)
				checkValid(t, fmt.Sprintf("n=%d parts=%d r=%d", n, parts, r), base, shards, parts, r)
				// A random prev, including dead and duplicate holders and
				// over-full shards, must still give a valid placement.
				prev := make(Placement, parts)
				for p := range prev {
					for k := rng.Intn(r + 3); k > 0; k-- {
						prev[p] = append(prev[p], fmt.Sprintf("node-%04d", rng.Intn(n+2)))
					}
				}
				next := Rendezvous{}.Place(shards, parts, r, prev)
				checkValid(t, fmt.Sprintf("n=%d parts=%d r=%d prev=%v", n, parts, r, prev), next, shards, parts, r)
			}
		}
	}
}

func TestRendezvousDeterministic(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	shards := SimNodes(37)
	prev := Rendezvous{}.Place(shards[:30], 200, 3, nil)
	want := Rendezvous{}.Place(shards, 200, 3, prev)
	for trial := 0; trial < 20; trial++ {
		perm := append([]string(nil), shards...)
		rng.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		perm = append(perm, perm[:5]...) // duplicates are one shard
		prevPerm := make(Placement, len(prev))
		for p, hs := range prev {
			prevPerm[p] = append([]string(nil), hs...)
			rng.Shuffle(len(hs), func(i, j int) { prevPerm[p][i], prevPerm[p][j] = prevPerm[p][j], prevPerm[p][i] })
		}
		if got := (Rendezvous{}).Place(perm, 200, 3, prevPerm); !reflect.DeepEqual(got, want) {
			t.Fatalf("trial %d: placement depends on input order", trial)
		}
	}
	// prev is not modified.
	if again := (Rendezvous{}).Place(shards[:30], 200, 3, nil); !reflect.DeepEqual(again, prev) {
		t.Fatal("Place modified prev or is not deterministic")
	}
}

func TestRendezvousStable(t *testing.T) {
	// With the same shards, placing again over a result moves nothing.
	for _, n := range []int{3, 10, 100, 1000} {
		nodes := SimNodes(n)
		base := Rendezvous{}.Place(nodes, 512, 3, nil)
		joined := Rendezvous{}.Place(append(nodes, "node-joiner"), 512, 3, base)
		left := Rendezvous{}.Place(nodes[1:], 512, 3, base)
		for what, c := range map[string]struct {
			shards []string
			p      Placement
		}{"base": {nodes, base}, "joined": {append(nodes, "node-joiner"), joined}, "left": {nodes[1:], left}} {
			if m := Moves(c.p, Rendezvous{}.Place(c.shards, 512, 3, c.p)); m != 0 {
				t.Errorf("n=%d %s: placing again moved %d copies", n, what, m)
			}
		}
	}
}

func TestRendezvousFromScratchIsTopR(t *testing.T) {
	// A partition goes to its top r shards by score, except where one of
	// them was full: a skipped favourite must be at the bound.
	for _, n := range []int{4, 20, 100} {
		nodes := SimNodes(n)
		p := Rendezvous{}.Place(nodes, 512, 3, nil)
		load := Load(p)
		bound := MaxLoad(n, 512, 3)
		s := newState(nodes, 512, 3)
		skipped := 0
		for part, hs := range p {
			if hs[0] != nodes[s.top(part)[0]] && load[nodes[s.top(part)[0]]] < bound {
				t.Errorf("n=%d partition %d: first holder %s is not its best shard", n, part, hs[0])
			}
			for _, i := range s.top(part) {
				if !contains(hs, nodes[i]) {
					skipped++
					if load[nodes[i]] != bound {
						t.Errorf("n=%d partition %d: skipped %s with %d copies, below bound %d", n, part, nodes[i], load[nodes[i]], bound)
					}
				}
			}
		}
		t.Logf("n=%d: %d of %d copies not on a top-3 shard", n, skipped, 512*3)
	}
}

func TestIDHashIsFNV1a(t *testing.T) {
	for _, id := range []string{"", "a", "node-0000", "10.0.0.1:9599"} {
		h := fnv.New64a()
		h.Write([]byte(id))
		if got, want := idHash(id), h.Sum64(); got != want {
			t.Errorf("idHash(%q) = %#x, want FNV-1a %#x", id, got, want)
		}
	}
}

func TestEmptyInputs(t *testing.T) {
	for _, st := range []Strategy{Sequins{}, Rendezvous{}} {
		if p := st.Place([]string{"a"}, 0, 3, nil); len(p) != 0 {
			t.Errorf("%s: no partitions gave %v", st.Name(), p)
		}
		for _, p := range []Placement{st.Place(nil, 4, 3, nil), st.Place([]string{"a"}, 4, 0, nil)} {
			if len(p) != 4 || len(Load(p)) != 0 {
				t.Errorf("%s: nothing to place gave %v", st.Name(), p)
			}
		}
	}
}
