// Package partitioner maps keys to partitions: the partition of a key is
// Java's String.hashCode over the key's bytes, as sequins computes it, so
// Hadoop's default partitioner output is usually pre-sharded. Every part
// of spangle (storaged's loader, routerd, the xds Lua filter's tests) must
// agree on it byte for byte, which is why it lives alone here.
//
// Which shard ids hold which partition is not decided here but in
// shared/placement.
package partitioner
