// Package buildinfo says which build of spangle runs: its version, the
// commit it was built from and the Go release that built it, for the
// daemons' --version, their status pages, their "listening" log line and
// the spangle_*_build_info gauge.
//
// The commit and a dirty flag come from what the Go toolchain stamps in
// every binary built inside a git checkout (runtime/debug.ReadBuildInfo).
// The version is what the Makefile's build sets from `git describe` with
// -ldflags "-X spangle/shared/buildinfo.version=..." (and .commit, used
// when the toolchain stamped none, as in a git worktree); a binary built
// otherwise reports the module's version, "(devel)" for a local build.
package buildinfo
