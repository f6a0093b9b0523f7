// Package memtrim gives back memory a daemon holds but no longer uses:
// the free pages of the Go heap and the pages of its own executable.
//
// A Go binary's code and read-only data (spangle's storaged is about 47
// MB of them, arrow-go, the AWS SDK and gRPC included) are mapped from
// the file, and once the page cache holds the file each fault maps a
// large neighbourhood: storaged counted 36 MB of its binary in its RSS
// before it had loaded anything, most of it package initializers and
// code a serving node never runs again (the loaders, Parquet, S3). The
// pages of a read-only, private mapping that was never written are the
// file's own, so dropping them from the process (madvise DONTNEED) loses
// nothing: they stay in the page cache, and the few a request touches
// fault back in (storaged's serving path brings back about 10 MB). A
// mapping that holds a private copy of any page (Anonymous above 0 in
// /proc/self/smaps, as a dynamic linker's relocated RELRO would) is left
// alone, since dropping it would bring back the file's bytes.
//
// The Go heap's free pages are returned by debug.FreeOSMemory, which
// first collects: after a load, what the load allocated is garbage that
// the heap would otherwise keep until the runtime's scavenger finds it.
//
// A Trimmer does both after being asked, at most once per interval, on
// one goroutine, so that many loads ending together cost one trim. On
// systems other than Linux only the heap is trimmed.
package memtrim
