package partitioner

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
