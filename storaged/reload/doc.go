// Package reload keeps track of the versions being built again because
// their source files changed after they became servable.
//
// A version is immutable in principle, but a job that writes its output
// again overwrites the files of a version already served, and a copy that
// keeps file times can change a version's files after it loaded. When a
// scan finds the settled files of a servable version different from the
// ones it was built from, the version manager asks a Reloader to build it
// again: one Job per version, started over when the files change again,
// forgotten when they go back, and, once failed, not tried again with the
// same files unless a refresh forces it.
//
// The Reloader owns only that bookkeeping and the Job's goroutine; the
// build beside the served copy and the swap are its Host's
// (storaged/versions), which it calls without holding its own lock. The
// host calls the Reloader with its own lock held (lock order: the host's
// lock, then the Reloader's), and never changes a version's phase here:
// the lifecycle table in storaged/versions stays the one authority on
// phases.
package reload
