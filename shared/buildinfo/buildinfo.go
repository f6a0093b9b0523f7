package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// version and commit are set by the linker (see the package comment):
// the only values of this package, fixed before main runs and never
// written.
var version, commit string

// Info describes one build.
type Info struct {
	// Version is the release (git describe), or "(devel)".
	Version string `json:"version"`
	// Commit is the git revision, with "-dirty" when the tree had
	// uncommitted changes; "unknown" when the toolchain stamped none
	// (go test, go run).
	Commit string `json:"commit"`
	// GoVersion is the Go release that built the binary.
	GoVersion string `json:"go_version"`
}

// Get returns the running binary's build.
func Get() Info {
	in := Info{Version: version, Commit: "unknown", GoVersion: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		if in.Version == "" {
			in.Version = "(devel)"
		}
		if commit != "" {
			in.Commit = commit
		}
		return in
	}
	if in.Version == "" {
		in.Version = bi.Main.Version
	}
	if in.Version == "" {
		in.Version = "(devel)"
	}
	var dirty bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Commit = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty && in.Commit != "unknown" {
		in.Commit += "-dirty"
	}
	if in.Commit == "unknown" && commit != "" {
		in.Commit = commit
	}
	if bi.GoVersion != "" {
		in.GoVersion = bi.GoVersion
	}
	return in
}

// String is the build as --version prints it.
func (in Info) String() string {
	return fmt.Sprintf("version %s, commit %s, %s", in.Version, in.Commit, in.GoVersion)
}
