// Package gcpace paces Go's garbage collector for a daemon whose heap
// holds little that stays live next to what its requests allocate.
//
// storaged keeps its block cache in memory mapped outside the heap, and
// routerd with a cold or small hot-key cache holds little more than its
// partition map, so each lives on a few MB of heap while serving tens of
// MB a second of short-lived allocations. At Go's default GOGC=100 the
// collector then runs whenever the heap doubles: about 16 times a second
// under load, each mark phase taking a share of the CPUs for 2-7 ms, and
// on a small machine that is what sets the tail of request latency. gcpace
// lets the heap grow by a fixed headroom past its live size before
// collecting, and never by less than a floor percentage of it: the
// percentage it sets is max(floor, 100*headroom/live), re-read as the live
// size changes (a version loaded or dropped, a cache filling): after every
// collection, and every interval. Once a second alone was too slow for a
// storaged that starts loading at once: the percentage computed from its
// near-empty heap (800) let an unsorted 1M-key load's heap grow to some
// 200 MB before the next look. routerd's
// floor is GOGC=100: its hot-key cache, once full, is live heap full of
// pointers that every collection marks. storaged's is 25: its large live
// heap (the tables' indexes and filters, several hundred MB at 100M keys)
// is flat byte slices that cost nothing to mark, and GOGC=100 would double
// the node's memory for them.
//
// The collector's settings are the process's, so only a main package
// should call Run, and it does nothing when the operator set GOGC.
package gcpace
