// Package partmap decides, per db, which version routerd serves, and pairs
// that choice with the partition map it was made from.
//
// The rules are sequins': a db is switched to a newer version only once
// that version is complete (every partition has min_replication live
// replicas), and it is never switched back, even when the version it
// serves loses replicas or a newer one disappears. The choice is
// recomputed lazily, once per map revision, so the request path pays one
// atomic load; no goroutine and no socket is involved, which keeps the
// rules testable with a topo.Mirror.
package partmap
