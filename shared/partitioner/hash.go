package partitioner

import "math/bits"

// HashCode is Java's String.hashCode computed over raw bytes:
// h = 31*h + b in int32 arithmetic, with each byte taken as unsigned.
//
// sequins uses this over the key's bytes rather than the UTF-16 code units
// a Java String would hash; for ASCII keys the two agree, and agreeing
// with sequins matters more than agreeing with Java for other bytes.
func HashCode(key []byte) int32 {
	// Four bytes a step: h*31^4 + b0*31^3 + b1*31^2 + b2*31 + b3 is the
	// same sum in 32-bit arithmetic, with the multiplications independent
	// of each other instead of one chain (a load hashes every key).
	var h uint32
	for len(key) >= 4 {
		h = h*(31*31*31*31) + uint32(key[0])*(31*31*31) + uint32(key[1])*(31*31) + uint32(key[2])*31 + uint32(key[3])
		key = key[4:]
	}
	for _, b := range key {
		h = 31*h + uint32(b)
	}
	return int32(h)
}

// Partition returns the partition of key in a version of n partitions:
// (HashCode(key) & 0x7fffffff) % n. n must be positive.
func Partition(key []byte, n int) int {
	if n <= 1<<31 {
		// A 32-bit division is the cheaper one; partition counts fit.
		return int(uint32(HashCode(key)&0x7fffffff) % uint32(n))
	}
	return int(HashCode(key)&0x7fffffff) % n
}

// Of partitions keys among n partitions as Partition does, with the
// division by n made a multiplication (Lemire, Kaser and Kurz, "Faster
// remainder by direct computation", 2019: exact for 32-bit dividends):
// a load partitions every record, and the division was a third of it.
type Of struct {
	m uint64
	n uint32
}

// New returns the partitioner of n partitions; n in [1, 1<<31].
func New(n int) Of {
	if n < 1 || n > 1<<31 {
		panic("partitioner: partition count out of range")
	}
	return Of{m: ^uint64(0)/uint64(n) + 1, n: uint32(n)}
}

// Partition returns Partition(key, n).
func (o Of) Partition(key []byte) int {
	x := uint32(HashCode(key) & 0x7fffffff)
	hi, _ := bits.Mul64(o.m*uint64(x), uint64(o.n))
	return int(hi)
}

// WritableHashCode is the hash Hadoop's BytesWritable.hashCode gives the
// same bytes: it starts at 1 instead of 0 and treats bytes as signed.
// Hadoop's default HashPartitioner uses it, which is why files written by
// a job are pre-sharded under a permutation of their indexes rather than
// holding the partition of their own index.
func WritableHashCode(key []byte) int32 {
	h := int32(1)
	for _, b := range key {
		h = 31*h + int32(int8(b))
	}
	return h
}
