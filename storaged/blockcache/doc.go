// Package blockcache is the node-wide cache of table blocks that
// storaged's partitions read through.
//
// One cache serves every open partition of a node, so its byte bound is
// the whole node's (LevelDB's per-database caches would grow with the
// number of partitions held). Blocks are immutable, so a lookup hands out
// the cached slice itself; eviction only forgets it, and the garbage
// collector frees it once no lookup still reads it.
//
// Eviction is CLOCK (second chance): a hit sets the entry's reference bit
// with one atomic store under a shared lock, and an insert sweeps entries,
// sparing once those touched since the last sweep. A hit therefore never
// takes an exclusive lock, which an LRU list would need to move the entry.
package blockcache
