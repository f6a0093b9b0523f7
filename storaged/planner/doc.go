// Package planner decides, at each scan of the source, which version of a
// db a storaged node heads for: the newest version that can be loaded,
// and below it the one to fall back on while that one is not active.
// versions.Manager loads what the plan says; the planner loads nothing.
//
// A version is passed over while it has no data files, while the files
// its _SUCCESS manifest lists are not all there (success.go), while its
// files are still changing (the settle time, counted from when this node
// first saw their file list, never from file times: a version shows as
// SETTLING meanwhile), and once it failed with the files it still has
// (the manager says which). A db's _PIN marker (pin.go) narrows the plan
// to the pinned version; its _FORMAT marker (format.go) says how its
// Parquet versions map columns, and one that cannot be read keeps the
// plan to the versions the node already has.
//
// The planner keeps, per db, the versions it watches settle, those
// waiting for files, the pin in force and the format; Status gives the
// manager a snapshot for /healthz, the status page and its gauges.
//
// Concurrency: a Planner is safe for concurrent use; its lock guards its
// per-db state only. It calls its Host (the manager) never while it holds
// that lock, so the manager may call Status, Format and Forget while it
// holds its own (lock order: the manager's lock, then the planner's).
package planner
