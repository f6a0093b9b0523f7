package coordinator

import (
	"errors"
	"reflect"
	"slices"
	"testing"

	"spangle/shared/placement"
	"spangle/shared/topo"
)

func TestRepairMovesOnlyLostCopies(t *testing.T) {
	for _, n := range []int{3, 4, 10, 100} {
		nodes := placement.SimNodes(n)
		cur := placement.Sequins{}.Place(nodes, 512, 3, nil)
		lost := placement.Load(cur)[nodes[1]]
		live := append(append([]string(nil), nodes[:1]...), nodes[2:]...)
		next := Repair(cur, live, 3)
		if n-1 < 3 {
			lost = 0 // too few nodes left for another copy
		}
		if moved := placement.Moves(cur, next); moved != lost {
			t.Errorf("n=%d: repair moved %d copies, the lost node held %d", n, moved, lost)
		}
		want := min(3, n-1)
		load := placement.Load(next)
		for p, hs := range next {
			if len(hs) != want {
				t.Fatalf("n=%d partition %d: holders %v, want %d", n, p, hs, want)
			}
			for _, h := range hs {
				if h == nodes[1] {
					t.Fatalf("n=%d partition %d: still on the lost node", n, p)
				}
			}
			for _, h := range cur[p] {
				if h != nodes[1] && !contains(hs, h) {
					t.Fatalf("n=%d partition %d: live holder %s dropped", n, p, h)
				}
			}
		}
		lo, hi := 1<<30, 0
		for _, id := range live {
			lo, hi = min(lo, load[id]), max(hi, load[id])
		}
		if hi-lo > 2 {
			t.Errorf("n=%d: after repair loads range %d..%d", n, lo, hi)
		}
		t.Logf("n=%d: %d copies moved for %d lost; loads %d..%d", n, placement.Moves(cur, next), lost, lo, hi)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func TestRepairKeepsNotYetDueAndIsStable(t *testing.T) {
	cur := placement.Placement{{"a", "b"}, {"b", "c"}, {"c", "a"}}
	// b gone but not due: kept in the set Repair may use.
	if next := Repair(cur, []string{"a", "b", "c"}, 2); !samePlacement(next, cur) {
		t.Fatalf("repair of a full placement changed it: %v", next)
	}
	next := Repair(cur, []string{"a", "c", "d"}, 2)
	if placement.Moves(cur, next) != 2 || !contains(next[0], "a") || !contains(next[1], "c") {
		t.Fatalf("repair = %v", next)
	}
	if again := Repair(next, []string{"a", "c", "d"}, 2); !samePlacement(again, next) {
		t.Fatalf("repair is not stable: %v then %v", next, again)
	}
	// b and c gone, c not for long enough: c keeps its copies, b's go,
	// and no new copy goes to c.
	kept := Repair(cur, []string{"a", "d"}, 2, "c")
	if !contains(kept[1], "c") || !contains(kept[2], "c") || placement.Load(kept)["c"] != 2 || placement.Moves(cur, kept) != 2 {
		t.Fatalf("repair keeping c = %v", kept)
	}
	for p, hs := range kept {
		if contains(hs, "b") || len(hs) != 2 {
			t.Fatalf("partition %d: %v", p, hs)
		}
	}
	if got := Gone(cur, []string{"a", "c"}); !reflect.DeepEqual(got, []string{"b"}) {
		t.Fatalf("Gone = %v", got)
	}
	if got := Idle(cur, []string{"a", "b", "c", "e"}); !reflect.DeepEqual(got, []string{"e"}) {
		t.Fatalf("Idle = %v", got)
	}
}

func TestRebalanceOnJoinMovesFairShare(t *testing.T) {
	for _, n := range []int{3, 10, 100} {
		nodes := placement.SimNodes(n)
		cur := placement.Rendezvous{}.Place(nodes, 512, 3, nil)
		next := Rebalance(cur, append(nodes, "joiner"), 3)
		moved := placement.Moves(cur, next)
		got := placement.Load(next)["joiner"]
		ideal := float64(512*3) / float64(n+1)
		if moved < got || float64(moved) > 1.25*ideal || float64(got) < 0.75*ideal {
			t.Errorf("n=%d: moved %d, joiner holds %d, ideal %.1f", n, moved, got, ideal)
		}
	}
}

// Over few partitions a joiner's share is what the scores give it, at
// least what the bound leaves over: with these addresses (a CI run's) the
// joiner ranks in the top two of only 2 of 12 partitions and takes 3 of
// the 24 copies, the old nodes keeping MaxLoad (7) each.
func TestRebalanceOnJoinAtLeastWhatTheBoundLeaves(t *testing.T) {
	old := []string{"127.0.0.1:44081", "127.0.0.1:38751", "127.0.0.1:37923"}
	live := append(slices.Clone(old), "127.0.0.1:45527")
	cur := placement.Rendezvous{}.Place(old, 12, 2, nil)
	next := Rebalance(cur, live, 2)
	bound := placement.MaxLoad(len(live), 12, 2)
	load := placement.Load(next)
	if got, least := load["127.0.0.1:45527"], 24-3*bound; got < least {
		t.Errorf("joiner holds %d, at least %d", got, least)
	}
	for id, l := range load {
		if l > bound {
			t.Errorf("%s holds %d, above the bound %d", id, l, bound)
		}
	}
}

func TestHoldsUntilNewHoldersPublished(t *testing.T) {
	a := topo.Assignment{Replicas: [][]string{{"a", "n"}, {"b", "c"}}, Previous: [][]string{{"a", "b"}, {"b", "c"}}}
	pub := placement.Placement{{"a", "b"}, {"b", "c"}}
	if !Holds(a, pub, "b", 0) {
		t.Error("b dropped partition 0 before n published it")
	}
	if Holds(a, pub, "c", 0) || !Holds(a, pub, "n", 0) || !Holds(a, pub, "c", 1) {
		t.Error("wrong holders")
	}
	if got := Pending(a, pub); got != 1 {
		t.Errorf("Pending = %d, want 1", got)
	}
	if got := InForce(a, pub); !reflect.DeepEqual(got, placement.Placement{{"a", "b", "n"}, {"b", "c"}}) {
		t.Errorf("InForce = %v", got)
	}
	pub[0] = []string{"a", "b", "n"}
	if Holds(a, pub, "b", 0) {
		t.Error("b keeps partition 0 after n published it")
	}
	if got := InForce(a, pub); !reflect.DeepEqual(got, placement.Placement{{"a", "n"}, {"b", "c"}}) {
		t.Errorf("InForce once settled = %v", got)
	}
	if Holds(a, pub, "a", 5) || Holds(a, pub, "a", -1) {
		t.Error("a partition out of range is held")
	}
}

func TestCountFiltersOlderRings(t *testing.T) {
	vote := func(node string, ring int64, token string) Vote {
		return Vote{Node: node, RingVersion: ring, LeaderToken: token}
	}
	cases := []struct {
		votes []Vote
		need  int
		ok    bool
	}{
		{[]Vote{vote("a", 5, "t"), vote("b", 5, "t"), vote("c", 5, "t")}, 3, true},
		{[]Vote{vote("a", 5, "t"), vote("b", 4, "t"), vote("c", 5, "t")}, 3, false}, // older ring discarded
		{[]Vote{vote("a", 5, "t"), vote("b", 4, "t"), vote("c", 5, "t")}, 2, true},  // majority of 3
		{[]Vote{vote("a", 5, "t"), vote("b", 5, "u"), vote("c", 5, "t")}, 3, false}, // another leader named
		{[]Vote{vote("a", 5, "t"), vote("b", 6, "t"), vote("c", 5, "t")}, 2, false}, // leader's ring is stale
		{[]Vote{vote("a", 5, "t")}, 2, false},                                       // too few answers
	}
	for i, c := range cases {
		err := Count(c.votes, "t", 5, c.need)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrNoQuorum)) {
			t.Errorf("case %d: Count = %v, want ok=%v", i, err, c.ok)
		}
	}
	for n, want := range map[int][2]int{1: {1, 1}, 2: {2, 2}, 3: {3, 2}, 4: {4, 3}, 5: {5, 3}} {
		if QuorumAll.Need(n) != want[0] || QuorumMajority.Need(n) != want[1] {
			t.Errorf("Need(%d) = %d, %d; want %v", n, QuorumAll.Need(n), QuorumMajority.Need(n), want)
		}
	}
	if q, err := ParseQuorum(""); q != QuorumAll || err != nil {
		t.Error(q, err)
	}
	if _, err := ParseQuorum("some"); err == nil {
		t.Error("ParseQuorum accepted some")
	}
}

func TestParseElectPath(t *testing.T) {
	db, v, p, err := ParseElectPath("/_elect/db1/v2/17")
	if err != nil || db != "db1" || v != "v2" || p != 17 {
		t.Fatalf("= %q %q %d %v", db, v, p, err)
	}
	for _, bad := range []string{"/_elect/db/v", "/_elect/db/v/-1", "/_elect//v/1", "/x/db/v/1", "/_elect/db/v/1/2"} {
		if _, _, _, err := ParseElectPath(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func TestTrimDropsFromTheFullest(t *testing.T) {
	cur := placement.Placement{{"a", "b", "new"}, {"a", "c", "new"}, {"a", "c"}, {"a", "b"}, {"b", "c"}}
	got := Trim(cur, 2)
	for p, hs := range got {
		if len(hs) != 2 {
			t.Fatalf("partition %d: %v", p, hs)
		}
	}
	if load := placement.Load(got); load["new"] != 2 {
		t.Fatalf("Trim = %v: the joiner, the least loaded, should keep its copies", got)
	}
	if again := Trim(got, 2); !samePlacement(again, got) {
		t.Fatal("Trim is not stable")
	}
}
