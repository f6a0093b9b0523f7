// Package gcpace paces Go's garbage collector for a process whose big
// memory lives outside the Go heap.
//
// storaged keeps its block cache in memory mapped outside the heap, so
// its heap holds only a few MB that stay live (indexes, filters, the
// serving state) while requests allocate several MB a second. At Go's
// default GOGC=100 the collector then runs whenever the heap doubles:
// about 16 times a second under load, each mark phase taking a share of
// the CPUs for 2-7 ms, which is what sets the tail of request latency on
// a small machine. gcpace lets the heap grow by a fixed headroom past its
// live size before collecting, and never by less than GOGC=100 would:
// the percentage it sets is max(100, 100*headroom/live), re-read as the
// live size changes (a version loaded or dropped).
//
// The collector's settings are the process's, so only a main package
// should call Run, and it does nothing when the operator set GOGC.
package gcpace
