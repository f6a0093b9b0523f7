// Package versions decides which version of each db a node serves: it
// scans the source, loads new versions in the background, makes a loaded
// version active (the one answered when a request pins none) with one
// atomic swap, keeps older versions for pinned requests until they have
// been unused for the retention period, and deletes them from disk.
//
// A scan heads for the newest version that can be loaded, as
// storaged/planner decides (plan.go is the planner's view of the
// manager): it
// passes over versions whose files are still changing (the settle time,
// counted from when this node first saw their file list, never from file
// times; such a version shows as SETTLING), and versions that failed with the files they still have, so a broken
// newest version leaves the previous one served. A version failed by a
// transient error (the source unreachable, an object changed mid-read, a
// local disk error: Transient) is passed over only until its backoff is
// over or Refresh is called, and then loaded again (retry.go; the policy
// is storaged/retry's). While nothing of a db is
// active it may also load a fallback, the next older version: one already
// complete in the local store at a start, or, in cluster mode, one the
// cluster can complete when the newest stays incomplete.
//
// Cluster mode plugs in through Hooks: which partitions of a version this
// node holds, whether a loaded version waits for an external signal
// (Manager.Activate) before it becomes active, and callbacks when a
// partition becomes servable, before a version is removed, and once a db
// that left the source has nothing left on the node (storaged/dbremoval:
// tried again at each scan until the cluster has forgotten the db).
// Standalone,
// a node holds every partition and a version is active once loaded.
//
// Each version the manager knows is in one phase (state.go), changed only
// by Manager.toLocked along the edges below. Any other move is a bug: it
// is refused and logged at DPanic level, which panics in the tests.
//
//	       scan            load done           activate        another activated
//	none ------> building -----------> loaded ---------> active -----------------> superseded
//	 |            |    |                 ^                 ^                           |
//	 |            |    | early Activate  | load done       +--------- activate --------+
//	 |            |    v                 |
//	 |            | activate-on-load ----+
//	 | unlistable |    |
//	 |            | load failed
//	 v            v    v
//	failed <------+----+
//	 |
//	 | forgotten
//	 v
//	gone
//
//	building, activate-on-load --cancel--> cancelling --load returned--> gone
//	loaded, active, superseded --remove--> retiring --unpublished--> removing --deleted--> gone
//
// The events:
//   - scan: a scan wants a version it does not know and starts its load.
//   - unlistable: its files cannot all be listed (the planner's
//     plannerHost.Fail, plan.go).
//   - early Activate: Manager.Activate while it loads (cluster mode).
//   - load done, load failed, load returned: its load ends.
//   - activate: Manager.Activate; or at once when loaded, if Hooks.Gated
//     is off or Activate came early (it is loaded in between, while
//     Hooks.PartitionReady runs); or a scan following the source back to
//     a superseded version.
//   - another activated: another version of the db became active.
//   - cancel: a scan no longer wants it, its files changed, its db left
//     the source, or the manager stops.
//   - remove: the same for a servable version (but not its files
//     changing: a servable version whose files change is built again
//     beside the copy that serves and swapped in, its phase unchanged;
//     rebuild.go), or a superseded one unused for the retention period.
//   - unpublished: Hooks.BeforeRemove returned.
//   - deleted: closed once no request uses it, and its files deleted.
//   - forgotten: a scan no longer reaches a failed version, its files
//     changed, or its retry after a transient error is due.
//
// A version a scan wants while it leaves (cancelling, retiring, removing),
// because its files changed or the source went back to it, carries a
// reload mark, not a phase of its own: once it is gone a scan runs, to
// load it anew.
//
// Until the versions the local store held complete at the start answer,
// Ready is false and the server answers 503 rather than 404 for what it
// cannot find (startup.go).
//
// Pinned requests find loaded, active, superseded and retiring versions;
// unpinned ones the active one. /healthz says BUILDING for building,
// activate-on-load, cancelling and loaded; ACTIVE for active; REMOVING
// for superseded, retiring and removing; ERROR for failed.
// Versions it does not hold also show there: HELD for those the source
// lists above a db's pin, BUILDING for those waiting for the files their
// _SUCCESS manifest lists (both storaged/planner's). A version loading
// shows its progress (progress.go).
//
// The request path (Manager.Acquire, Version.Get) takes no lock: it reads
// an immutable snapshot through an atomic pointer, and a version's
// reference count keeps its databases open while a request uses them.
//
// What is not the lifecycle lives in packages of its own, each seeing the
// manager through a small interface or plain callbacks: storaged/planner
// (what a scan heads for), storaged/builder (making and opening a
// version's local copy), storaged/retry (the backoff policy),
// storaged/repair and storaged/scrub (a partition whose block fails its
// checksum, found by a lookup or by the scrub of a version reused after a
// restart, is rebuilt in the background and swapped in by one snapshot
// swap), storaged/replica (partitions added and dropped for the
// coordinator), storaged/reload (which servable version is being built
// again because its files changed) and storaged/dbremoval.
// partitions.go, plan.go and rebuild.go hold the adapters they call back
// through; each takes the manager's lock for a moment, and none of them
// calls back while it holds a lock of its own, so the manager may call
// them with its lock held. None of them changes a phase: toLocked, over
// the table in state.go, does.
//
// What is read and not changed (Health, Status, the partitions held, the
// source's health, the counts) is on Views (views.go), not on the
// Manager, whose methods are the lifecycle.
//
// Files: manager.go (options, Run, Scan, consider, ensure, Activate,
// publish), lifecycle.go (load, remove), state.go (the phase table),
// version.go (Version and the snapshot), rebuild.go (the build and swap
// of a version whose files changed), scans.go (when the next scan is
// due), retry.go, startup.go, offline.go, status.go and views.go (the
// read-only views), progress.go; partitions.go, plan.go and rebuild.go
// (the adapters).
package versions
