package hashring

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
)

func TestHashCodeMatchesJava(t *testing.T) {
	// Values from java.lang.String#hashCode.
	cases := map[string]int32{
		"":                   0,
		"a":                  97,
		"hello":              99162322,
		"Aa":                 2112, // "Aa" and "BB" collide in Java.
		"BB":                 2112,
		"polygenelubricants": -2147483648,
	}
	for k, want := range cases {
		if got := HashCode([]byte(k)); got != want {
			t.Errorf("HashCode(%q) = %d, want %d", k, got, want)
		}
	}
}

// HashCode's four-byte steps give the one-byte recurrence's value for
// every length and byte.
func TestHashCodeSteps(t *testing.T) {
	naive := func(key []byte) int32 {
		var h int32
		for _, b := range key {
			h = 31*h + int32(b)
		}
		return h
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < 40; n++ {
		for i := 0; i < 100; i++ {
			k := make([]byte, n)
			for j := range k {
				k[j] = byte(rng.Uint32())
			}
			if got, want := HashCode(k), naive(k); got != want {
				t.Fatalf("HashCode(%x) = %d, want %d", k, got, want)
			}
		}
	}
}

func TestPartitionIsNonNegative(t *testing.T) {
	// "polygenelubricants" hashes to MinInt32; masking keeps it in range.
	for _, n := range []int{1, 2, 7, 8, 64} {
		p := Partition([]byte("polygenelubricants"), n)
		if p < 0 || p >= n {
			t.Fatalf("Partition out of range: %d of %d", p, n)
		}
	}
	if got := Partition([]byte{0xff, 0xff}, 8); got != int((31*255+255)&0x7fffffff)%8 {
		t.Fatalf("high bytes must hash unsigned, got %d", got)
	}
}

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

func FuzzPartition(f *testing.F) {
	f.Add([]byte("1881/boy"), 5)
	f.Fuzz(func(t *testing.T, key []byte, n int) {
		if n <= 0 {
			return
		}
		if p := Partition(key, n); p < 0 || p >= n {
			t.Fatalf("Partition(%q, %d) = %d", key, n, p)
		}
	})
}
