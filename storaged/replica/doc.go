// Package replica adds and drops partitions of the versions a storaged
// node already serves, for the coordinator's re-replication and
// rebalancing: a partition the leader assigns here is copied from a peer
// (checked block by block) or built from the source, opened, and swapped
// into its version with one snapshot swap, as a repaired one is; a
// partition given to other nodes is swapped out and closed once the
// requests that may still read it have had repair.DropGrace to finish.
//
// A Set sees the version manager only through Host. Each Host call takes
// the manager's lock for a moment, and a Set holds no lock of its own, so
// there is no lock order to keep.
package replica
