// Package dbremoval lets the cluster forget a db the source no longer
// lists, once nothing of it is left on this node.
//
// The order is the point: the cluster's hook runs only once every version
// of the db is gone from this node, so after the version manager's
// BeforeRemove has withdrawn its partitions; the cluster can then delete
// what is left of the db (in cluster mode, its version entries, which
// only the last node to withdraw succeeds in deleting). A failure never
// blocks the manager: the hook runs in its own goroutine, one call at a
// time per db, and is tried again at the next scan that still finds the
// db gone; a db the source lists again is forgotten.
//
// Nothing of it survives a restart. A node that restarts after its db
// was removed holds nothing of it, and its entries went with its old
// session; the nodes that stayed up keep trying until the db's entries
// are gone (see storaged/membership's dbRemoved).
//
// Concurrency: a Tracker is safe for concurrent use. The version manager
// calls it while holding its own lock (lock order: the manager's lock,
// then the Tracker's); the Tracker calls back into nothing of the
// manager's, only the hook, without its lock.
package dbremoval
