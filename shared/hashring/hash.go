package hashring

// HashCode is Java's String.hashCode computed over raw bytes:
// h = 31*h + b in int32 arithmetic, with each byte taken as unsigned.
//
// sequins uses this over the key's bytes rather than the UTF-16 code units
// a Java String would hash; for ASCII keys the two agree, and agreeing
// with sequins matters more than agreeing with Java for other bytes.
func HashCode(key []byte) int32 {
	var h int32
	for _, b := range key {
		h = 31*h + int32(b)
	}
	return h
}

// Partition returns the partition of key in a version of n partitions:
// (HashCode(key) & 0x7fffffff) % n. n must be positive.
func Partition(key []byte, n int) int {
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
