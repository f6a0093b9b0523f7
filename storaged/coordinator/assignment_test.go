package coordinator

import (
	"errors"
	"reflect"
	"testing"

	"spangle/shared/dbver"
	"spangle/shared/placement"
	"spangle/shared/topo"
)

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
	k, err := ParseElectPath("/_elect/db1/v2/17")
	if err != nil || k != (dbver.Partition{DB: "db1", Version: "v2", P: 17}) {
		t.Fatalf("= %+v %v", k, err)
	}
	for _, bad := range []string{"/_elect/db/v", "/_elect/db/v/-1", "/_elect//v/1", "/x/db/v/1", "/_elect/db/v/1/2"} {
		if _, err := ParseElectPath(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
