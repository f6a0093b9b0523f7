// Package versions decides which version of each db a node serves: it
// scans the source, loads new versions in the background, makes a loaded
// version active (the one answered when a request pins none) with one
// atomic swap, keeps older versions for pinned requests until they have
// been unused for the retention period, and deletes them from disk.
//
// A scan heads for the newest version that can be loaded (plan.go): it
// passes over versions whose files are still changing (the settle time),
// and versions that failed with the files they still have, so a broken
// newest version leaves the previous one served. While nothing of a db is
// active it may also load a fallback, the next older version: one already
// complete in the local store at a start, or, in cluster mode, one the
// cluster can complete when the newest stays incomplete.
//
// Cluster mode plugs in through Hooks: which partitions of a version this
// node holds, whether a loaded version waits for an external signal
// (Manager.Activate) before it becomes active, and callbacks when a
// partition becomes servable, before a version is removed, and once a db
// that left the source has nothing left on the node (dbremoved.go: tried
// again at each scan until the cluster has forgotten the db). Standalone,
// a node holds every partition and a version is active once loaded.
//
// The request path (Manager.Acquire, Version.Get) takes no lock: it reads
// an immutable snapshot through an atomic pointer, and a version's
// reference count keeps its databases open while a request uses them.
//
// A partition whose block fails its checksum, found by a lookup or by the
// scrub of a version reused after a restart, is rebuilt in the background
// and swapped in the same way, by one snapshot swap (repair.go, scrub.go).
package versions
