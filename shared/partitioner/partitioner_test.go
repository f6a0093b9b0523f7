package partitioner

import (
	"math/rand/v2"
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

// Of.Partition is Partition, for partition counts small and large and
// hashes over the whole 31-bit range.
func TestOfMatchesPartition(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 2, 3, 7, 8, 10, 100, 1000, 65537, 1<<31 - 1, 1 << 31} {
		o := New(n)
		for i := 0; i < 20000; i++ {
			k := make([]byte, rng.IntN(24))
			for j := range k {
				k[j] = byte(rng.Uint32())
			}
			if got, want := o.Partition(k), Partition(k, n); got != want {
				t.Fatalf("New(%d).Partition(%x) = %d, Partition = %d", n, k, got, want)
			}
		}
	}
}
