// Package hashring maps keys to partitions and partitions to shard ids.
//
// Two rules live here because every part of spangle must agree on them
// byte for byte: the partition of a key (Java's String.hashCode over the
// key's bytes, as sequins does, so Hadoop's default partitioner output is
// usually pre-sharded) and the seed's round-robin assignment of partition
// copies to the sorted distinct shard ids.
package hashring
