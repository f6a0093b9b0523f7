// Package scrub reads a node's local partitions back and checks every
// block's checksum, at a rate bounded over the whole node, so that bit rot
// in a version reused after a restart is found before a lookup meets it.
//
// A version reused from the local store was checked when it was built,
// but its files have sat on disk since. The scrub reads every block of
// every held partition, in the background while the version serves, and
// hands each corrupt partition to its caller (storaged/repair), which
// rebuilds it. It reads the files itself (table.VerifyPartition), not
// through the open partitions, so it needs no reference to the version
// and leaves the block cache alone.
//
// A Pacer is safe for concurrent use: the scrubs of several versions share
// one, and so share its rate.
package scrub
