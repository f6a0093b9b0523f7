// Package repair mends a node's local store: a partition found with a bad
// block (bit rot, a bad disk) is rebuilt in the background and swapped in
// while its version goes on serving.
//
// Every block's checksum is checked whenever it is read from disk, so a
// lookup that reads a bad block finds it (versions.Version.Get answers
// ErrPartitionCorrupt), and so does the scrub of a version reused after a
// restart (storaged/scrub). Either reports the partition here, once,
// through the channel Reports returns; the Repairer marks it bad and
// rebuilds it, from a peer in cluster mode, else from the source, while
// the version serves its other partitions and the bad partition's other
// blocks. The rebuilt copy is written beside the bad one, moved in its
// place, opened, and handed to the version manager, which swaps it in
// with one snapshot swap, as a partition added by re-replication is: the
// request path takes no lock. The bad copy is closed and deleted once the
// requests that may still read it have had DropGrace to finish.
//
// The Repairer sees the version manager only through Host, three calls
// that each take the manager's lock for a moment. Lock order: the
// manager's lock, then the Repairer's; the Repairer never calls Host
// while it holds its own lock, and the manager may call Corrupt, Bad and
// Forget while it holds its own.
package repair
