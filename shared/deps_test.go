// Package shared_test holds the module's dependency rule, checked with
// go list so that a wrong import fails a test rather than a code review:
// shared imports nothing else of ours, storaged and routerd never import
// each other, xds imports only shared, routerd may embed xds, and the
// app-facing client imports only shared (and no daemon imports it).
package shared_test

import (
	"os/exec"
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
	"client":   {"client", "shared"},
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
