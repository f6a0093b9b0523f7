// Package blockcache is the node-wide cache of table blocks that
// storaged's partitions read through.
//
// One cache serves every open partition of a node, so its byte bound is
// the whole node's (LevelDB's per-database caches would grow with the
// number of partitions held). A lookup reads a cached block inside a
// callback under its shard's read lock and copies out what it needs, so a
// block evicted under the write lock is unused, and its buffer is handed
// out again for the next block read: a cache that misses all the time
// makes little garbage.
//
// Eviction is CLOCK (second chance): a hit sets the entry's reference bit
// with one atomic store under a shared lock, and an insert sweeps entries,
// sparing once those touched since the last sweep. A hit therefore never
// takes an exclusive lock, which an LRU list would need to move the entry.
//
// The blocks' memory is mapped outside Go's heap (arena.go), in chunks
// asking for transparent huge pages, so the bound is what the cache costs:
// on the heap, the collector's headroom would double it.
package blockcache
