package versions

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"spangle/shared/dbver"
	"spangle/shared/source"
	"spangle/shared/wire"
	"spangle/storaged/store"
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
	waitFor(t, "v1 removed", func() bool { _, ok := h.m.Views().Health()["db"]["v1"]; return !ok })
	waitFor(t, "v1's local copy deleted", func() bool { _, err := h.store.ReadManifest(dbver.Of("db", "v1")); return err != nil })

	// Pin back to v1: loaded again from the source and served.
	writePin(t, root, "db", "v1\n")
	h.m.Refresh()
	h.waitState("db", "v1", wire.StateActive)
	if val, name, err := h.get("db", "", "key-000004"); err != nil || name != "v1" || val != "value-4-v1" {
		t.Fatalf("pinned: got %q from %s, %v; want v1's value", val, name, err)
	}
	st := h.m.Views().Status("db")["db"]
	gen := st.PinGeneration
	if st.Pin != "v1" || gen != 1 || st.PinError != "" || st.Current != "v1" {
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
	if hz := h.m.Views().Health()["db"]["v3"]; hz.State != wire.StateHeld || !strings.Contains(hz.Reason, "pinned to v1") {
		t.Fatalf("v3 under the pin on /healthz: %+v", hz)
	}
	if vs := h.m.Views().Status("db")["db"].Versions["v3"]; vs.State != wire.StateHeld || !strings.Contains(vs.Reason, "pinned to v1") {
		t.Fatalf("v3 under the pin on the status page: %+v", vs)
	}

	// A malformed marker: nothing changes, the error shows.
	writePin(t, root, "db", "v1\nv3\n")
	h.m.Scan(context.Background())
	st = h.m.Views().Status("db")["db"]
	if st.Pin != "v1" || !strings.Contains(st.PinError, "malformed") || h.m.CurrentVersion("db") != "v1" {
		t.Fatalf("malformed marker: %+v", st)
	}
	if hz := h.m.Views().Health()["db"][source.PinFile]; hz.State != wire.StateError || !strings.Contains(hz.Reason, "malformed") {
		t.Fatalf("malformed marker on /healthz: %+v", hz)
	}
	// A pin to a version the source does not hold: nothing changes.
	writePin(t, root, "db", "v9")
	h.m.Scan(context.Background())
	st = h.m.Views().Status("db")["db"]
	if st.Pin != "v1" || !strings.Contains(st.PinError, `"v9" is not in the source`) || h.m.CurrentVersion("db") != "v1" {
		t.Fatalf("missing pinned version: %+v", st)
	}

	// Unpin: forward to the newest.
	if err := os.Remove(filepath.Join(root, "db", source.PinFile)); err != nil {
		t.Fatal(err)
	}
	h.m.Refresh()
	h.waitState("db", "v3", wire.StateActive)
	st = h.m.Views().Status("db")["db"]
	if st.Pin != "" || st.PinGeneration != gen+1 || st.PinError != "" {
		t.Fatalf("unpinned status: %+v", st)
	}
	if _, ok := h.m.Views().Health()["db"][source.PinFile]; ok {
		t.Fatal("the marker's error stays on /healthz after unpinning")
	}
}

// A standalone node numbers its pin steps 1, 2, 3... and keeps counting
// across a restart from the step recorded in its local store; the pin in
// force before the restart stays in force when the marker cannot be read
// after it, as it would have without the restart.
func TestStandalonePinGenerationCountsAcrossRestarts(t *testing.T) {
	root, storeDir := t.TempDir(), t.TempDir()
	writeV(t, root, "db", "v1")
	writeV(t, root, "db", "v2")
	status := func(h *harness) (string, uint64, string) {
		st := h.m.Views().Status("db")["db"]
		return st.Pin, st.PinGeneration, st.PinError
	}
	// expect waits until active serves and checks the pin and its
	// generation.
	expect := func(h *harness, what, active, pin string, gen uint64) {
		t.Helper()
		h.waitState("db", active, wire.StateActive)
		if got, g, _ := status(h); got != pin || g != gen {
			t.Fatalf("%s: pin %q generation %d, want %q at %d", what, got, g, pin, gen)
		}
	}

	h := start(t, root, storeDir, nil)
	expect(h, "never pinned", "v2", "", 0)
	writePin(t, root, "db", "v1\n")
	h.m.Refresh()
	expect(h, "first pin", "v1", "v1", 1)
	// The same marker at every later scan is no new step.
	h.m.Scan(context.Background())
	h.m.Scan(context.Background())
	if _, gen, _ := status(h); gen != 1 {
		t.Fatalf("the same marker moved the generation to %d", gen)
	}
	h.stop()

	// Restarted with a marker that cannot be read: v1 stays pinned at 1.
	writePin(t, root, "db", "v1\nv2\n")
	h = start(t, root, storeDir, nil)
	h.waitState("db", "v1", wire.StateActive)
	if pin, gen, why := status(h); pin != "v1" || gen != 1 || !strings.Contains(why, "malformed") {
		t.Fatalf("after a restart with a bad marker: %q generation %d (%q), want v1 at 1 and the marker's error", pin, gen, why)
	}
	if cur := h.m.CurrentVersion("db"); cur != "v1" {
		t.Fatalf("after a restart with a bad marker the db serves %s, want the pinned v1", cur)
	}
	// Unpinned: step 2, recorded, then pinned again after another restart: 3.
	if err := os.Remove(filepath.Join(root, "db", source.PinFile)); err != nil {
		t.Fatal(err)
	}
	h.m.Refresh()
	expect(h, "unpin", "v2", "", 2)
	h.stop()
	h = start(t, root, storeDir, nil)
	expect(h, "restarted unpinned", "v2", "", 2)
	writePin(t, root, "db", "v1")
	h.m.Refresh()
	expect(h, "pinned again", "v1", "v1", 3)
	steps, err := h.store.PinSteps()
	if err != nil || steps["db"] != (store.PinStep{Version: "v1", Generation: 3}) {
		t.Fatalf("recorded steps %+v, %v; want db at v1, 3", steps, err)
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
	st := h.m.Views().Status("db")["db"]
	if st.Current != "v2" || st.Pin != "v1" || !strings.Contains(st.PinError, "failed to load") {
		t.Fatalf("status: %+v", st)
	}
	if _, name, err := h.get("db", "", "key-000004"); err != nil || name != "v2" {
		t.Fatalf("got from %s, %v; want v2", name, err)
	}
}
