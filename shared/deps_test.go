// Package shared_test holds the module's dependency rule, checked with
// go list so that a wrong import fails a test rather than a code review:
// shared imports nothing else of ours, storaged and routerd never import
// each other, xds imports only shared, routerd may embed xds, and the
// app-facing client, a module of its own, imports nothing of ours (and
// no daemon imports it).
// Inside each daemon, the HTTP package stays HTTP only: the wiring lives
// in the daemon package above it.
package shared_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// allowed lists, for each top-level part, the parts of spangle it may
// depend on (itself included).
var allowed = map[string][]string{
	"shared":     {"shared"},
	"xds":        {"xds", "shared"},
	"storaged":   {"storaged", "shared"},
	"routerd":    {"routerd", "shared", "xds"},
	"client":     {"client"}, // its own module: nothing of the server's
	"clienttest": {"clienttest", "client", "shared"},
	"spangle":    {"spangle", "shared"},
}

// httpOnly lists, for each daemon's HTTP package, what it must not depend
// on: its daemon package (which imports it), its config, and the
// discovery backends and xDS server that the daemon wires up.
var httpOnly = map[string][]string{
	"routerd/server":  {"routerd/daemon", "routerd/config", "shared/topo/zktopo", "shared/topo/statictopo", "xds"},
	"storaged/server": {"storaged/daemon", "storaged/config", "shared/topo/zktopo", "shared/topo/statictopo"},
}

// deps lists the packages of spangle that pattern depends on, without
// the "spangle/" prefix.
func deps(t *testing.T, pattern string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "spangle/"+pattern).CombinedOutput()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", pattern, err, out)
	}
	var ours []string
	for _, pkg := range strings.Fields(string(out)) {
		if rest, ok := strings.CutPrefix(pkg, "spangle/"); ok {
			ours = append(ours, rest)
		}
	}
	return ours
}

func TestDependencyRule(t *testing.T) {
	for part, may := range allowed {
		for _, rest := range deps(t, part+"/...") {
			top, _, _ := strings.Cut(rest, "/")
			ok := false
			for _, m := range may {
				ok = ok || top == m
			}
			if !ok {
				t.Errorf("%s depends on spangle/%s; it may depend only on %v", part, rest, may)
			}
		}
	}
}

func TestHTTPPackagesStayHTTP(t *testing.T) {
	for pkg, not := range httpOnly {
		for _, dep := range deps(t, pkg) {
			for _, n := range not {
				if dep == n || strings.HasPrefix(dep, n+"/") {
					t.Errorf("%s depends on spangle/%s; the wiring belongs in its daemon package", pkg, dep)
				}
			}
		}
	}
}

// below lists packages that sit under the rest of their part, with the
// packages of spangle they may depend on (themselves included): the
// LevelDB format (storaged/table) knows nothing of the local store, the
// versions or the daemon that use it, so the store imports the format and
// never the reverse. Besides its block cache it may use the shared formats
// a partition is made of or checked by: a Sparkey pair it serves in place,
// the partitioner that pair's keys are checked against, and the bad-file
// error both name.
var below = map[string][]string{
	"storaged/table": {"storaged/table", "storaged/blockcache", "storaged/internal/fsync",
		"shared/sparkey", "shared/partitioner", "shared/badfile"},
}

func TestLowerPackages(t *testing.T) {
	for pkg, may := range below {
		out, err := exec.Command("go", "list", "-deps", "spangle/"+pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			rest, ours := strings.CutPrefix(dep, "spangle/")
			if ours && !slices.Contains(may, rest) {
				t.Errorf("%s depends on %s; it may depend only on %v", pkg, dep, may)
			}
		}
	}
}
