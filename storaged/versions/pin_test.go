package versions

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"spangle/shared/source"
	"spangle/shared/wire"
)

func writePin(t *testing.T, root, db, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(root, db, source.PinFile), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A _PIN marker rolls a standalone db back to the version it names, even
// one whose local copy was deleted long ago; a malformed marker or one
// naming a missing version changes nothing and shows why; deleting the
// marker rolls forward to the newest version.
func TestStandalonePin(t *testing.T) {
	root := t.TempDir()
	writeV(t, root, "db", "v1")
	h := start(t, root, t.TempDir(), func(o *Options) { o.Retention = time.Millisecond })
	h.waitState("db", "v1", wire.StateActive)
	writeV(t, root, "db", "v2")
	h.m.Refresh()
	h.waitState("db", "v2", wire.StateActive)
	// v1 is swept after its retention and deleted from the local store.
	waitFor(t, "v1 removed", func() bool { _, ok := h.m.Health()["db"]["v1"]; return !ok })
	waitFor(t, "v1's local copy deleted", func() bool { _, err := h.store.ReadManifest("db", "v1"); return err != nil })

	// Pin back to v1: loaded again from the source and served.
	writePin(t, root, "db", "v1\n")
	h.m.Refresh()
	h.waitState("db", "v1", wire.StateActive)
	if val, name, err := h.get("db", "", "key-000004"); err != nil || name != "v1" || val != "value-4-v1" {
		t.Fatalf("pinned: got %q from %s, %v; want v1's value", val, name, err)
	}
	st := h.m.Status("db")["db"]
	gen := st.PinGeneration
	if st.Pin != "v1" || gen == 0 || st.PinError != "" || st.Current != "v1" {
		t.Fatalf("pinned status: %+v", st)
	}
	// A newer version does not move a pinned db, and the pinned version
	// outlives any retention.
	writeV(t, root, "db", "v3")
	h.m.Scan(context.Background())
	time.Sleep(20 * time.Millisecond)
	h.m.Scan(context.Background())
	if cur := h.m.CurrentVersion("db"); cur != "v1" {
		t.Fatalf("a new version moved a pinned db to %s", cur)
	}
	// It says it is held, on /healthz and the status page.
	if hz := h.m.Health()["db"]["v3"]; hz.State != wire.StateHeld || !strings.Contains(hz.Reason, "pinned to v1") {
		t.Fatalf("v3 under the pin on /healthz: %+v", hz)
	}
	if vs := h.m.Status("db")["db"].Versions["v3"]; vs.State != wire.StateHeld || !strings.Contains(vs.Reason, "pinned to v1") {
		t.Fatalf("v3 under the pin on the status page: %+v", vs)
	}

	// A malformed marker: nothing changes, the error shows.
	writePin(t, root, "db", "v1\nv3\n")
	h.m.Scan(context.Background())
	st = h.m.Status("db")["db"]
	if st.Pin != "v1" || !strings.Contains(st.PinError, "malformed") || h.m.CurrentVersion("db") != "v1" {
		t.Fatalf("malformed marker: %+v", st)
	}
	if hz := h.m.Health()["db"][source.PinFile]; hz.State != wire.StateError || !strings.Contains(hz.Reason, "malformed") {
		t.Fatalf("malformed marker on /healthz: %+v", hz)
	}
	// A pin to a version the source does not hold: nothing changes.
	writePin(t, root, "db", "v9")
	h.m.Scan(context.Background())
	st = h.m.Status("db")["db"]
	if st.Pin != "v1" || !strings.Contains(st.PinError, `"v9" is not in the source`) || h.m.CurrentVersion("db") != "v1" {
		t.Fatalf("missing pinned version: %+v", st)
	}

	// Unpin: forward to the newest.
	if err := os.Remove(filepath.Join(root, "db", source.PinFile)); err != nil {
		t.Fatal(err)
	}
	h.m.Refresh()
	h.waitState("db", "v3", wire.StateActive)
	st = h.m.Status("db")["db"]
	if st.Pin != "" || st.PinGeneration <= gen || st.PinError != "" {
		t.Fatalf("unpinned status: %+v", st)
	}
	if _, ok := h.m.Health()["db"][source.PinFile]; ok {
		t.Fatal("the marker's error stays on /healthz after unpinning")
	}
}

// A pinned version that fails to load leaves the current one serving,
// with the reason on the status page.
func TestPinToBrokenVersion(t *testing.T) {
	root := t.TempDir()
	corruptV(t, root, "db", "v1")
	writeV(t, root, "db", "v2")
	h := start(t, root, t.TempDir(), nil)
	h.waitState("db", "v2", wire.StateActive)
	writePin(t, root, "db", "v1")
	h.m.Refresh()
	h.waitState("db", "v1", wire.StateError)
	h.m.Scan(context.Background())
	st := h.m.Status("db")["db"]
	if st.Current != "v2" || st.Pin != "v1" || !strings.Contains(st.PinError, "failed to load") {
		t.Fatalf("status: %+v", st)
	}
	if _, name, err := h.get("db", "", "key-000004"); err != nil || name != "v2" {
		t.Fatalf("got from %s, %v; want v2", name, err)
	}
}
