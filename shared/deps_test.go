// Package shared_test holds the module's dependency rule, checked with
// go list so that a wrong import fails a test rather than a code review:
// shared imports nothing else of ours, storaged and routerd never import
// each other, xds imports only shared, and routerd may embed xds.
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
	"shared":   {"shared"},
	"xds":      {"xds", "shared"},
	"storaged": {"storaged", "shared"},
	"routerd":  {"routerd", "shared", "xds"},
}

func TestDependencyRule(t *testing.T) {
	for part, may := range allowed {
		out, err := exec.Command("go", "list", "-deps", "spangle/"+part+"/...").CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", part, err, out)
		}
		for _, pkg := range strings.Fields(string(out)) {
			rest, ours := strings.CutPrefix(pkg, "spangle/")
			if !ours {
				continue
			}
			top, _, _ := strings.Cut(rest, "/")
			ok := false
			for _, m := range may {
				ok = ok || top == m
			}
			if !ok {
				t.Errorf("%s depends on %s; it may depend only on %v", part, pkg, may)
			}
		}
	}
}

// below lists packages that sit under the rest of their part, with the
// packages of spangle they may depend on (themselves included): the
// LevelDB format (storaged/table) knows nothing of the local store, the
// versions or the daemon that use it, so the store imports the format and
// never the reverse.
var below = map[string][]string{
	"storaged/table": {"storaged/table", "storaged/blockcache", "storaged/internal/fsync"},
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
