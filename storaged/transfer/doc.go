// Package transfer copies a loaded partition from one storaged to
// another: a partition's database files are immutable once built, so a
// node that gains a partition (re-replication, rebalancing) streams them
// from a live peer as a tar archive instead of reading the whole version
// from the source again.
package transfer
