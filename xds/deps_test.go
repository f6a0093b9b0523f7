package xds

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDependencies keeps xds embeddable: it may import spangle's shared
// packages and external modules, never the daemons.
func TestDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "spangle/xds/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if pkg == "spangle" || strings.HasPrefix(pkg, "spangle/") {
			if !strings.HasPrefix(pkg, "spangle/shared/") && !strings.HasPrefix(pkg, "spangle/xds") {
				t.Errorf("xds depends on %s", pkg)
			}
		}
	}
}
