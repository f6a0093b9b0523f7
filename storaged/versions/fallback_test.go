package versions

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"spangle/shared/dbver"
	"spangle/shared/wire"
)

// corruptV writes version as writeV does, then damages its first file.
func corruptV(t *testing.T, root, db, version string) {
	t.Helper()
	writeV(t, root, db, version)
	if err := os.WriteFile(filepath.Join(root, db, version, "part-00000"), []byte("SEQ\x06garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A fresh manager whose newest version is corrupt serves the newest one
// that loads, and shows the broken one as ERROR with its reason.
func TestCorruptNewestFallsBack(t *testing.T) {
	root := t.TempDir()
	writeV(t, root, "db", "v1")
	writeV(t, root, "db", "v2")
	corruptV(t, root, "db", "v3")
	h := start(t, root, t.TempDir(), nil)
	h.waitState("db", "v2", wire.StateActive)
	h.waitState("db", "v3", wire.StateError)
	if r := h.m.Views().Health()["db"]["v3"].Reason; !strings.Contains(r, "part-00000") {
		t.Fatalf("v3's reason %q does not name the bad file", r)
	}
	if val, name, err := h.get("db", "", "key-000004"); err != nil || name != "v2" || val != "value-4-v2" {
		t.Fatalf("got %q from %s, %v; want v2's value", val, name, err)
	}
	// More scans leave it so: the broken version is not tried again
	// while its files are the same.
	_, _, failedBefore := h.m.Views().Counts()
	h.m.Scan(context.Background())
	h.m.Scan(context.Background())
	if _, _, f := h.m.Views().Counts(); f != failedBefore || h.state("db", "v3") != wire.StateError || h.m.CurrentVersion("db") != "v2" {
		t.Fatalf("after more scans: failed %d (was %d), v3 %s, current %s", f, failedBefore, h.state("db", "v3"), h.m.CurrentVersion("db"))
	}
	// Fixed in the source, it is tried again and served.
	os.RemoveAll(filepath.Join(root, "db", "v3"))
	writeV(t, root, "db", "v3")
	h.m.Refresh()
	h.waitState("db", "v3", wire.StateActive)
}

// A restart on the same local store serves the version it served from the
// local store, without reading the source, while the newer broken one
// fails again.
func TestRestartServesLocalWhileNewestFails(t *testing.T) {
	root := t.TempDir()
	writeV(t, root, "db", "v1")
	writeV(t, root, "db", "v2")
	storeDir := t.TempDir()
	h := start(t, root, storeDir, nil)
	h.waitState("db", "v2", wire.StateActive)
	waitFor(t, "v2 durable", func() bool {
		man, err := h.store.ReadManifest(dbver.Of("db", "v2"))
		return err == nil && man.Complete
	})
	h.stop()

	corruptV(t, root, "db", "v3")
	h2 := start(t, root, storeDir, nil)
	h2.waitState("db", "v2", wire.StateActive)
	h2.waitState("db", "v3", wire.StateError)
	if l, r, _ := h2.m.Views().Counts(); l != 0 || r != 1 {
		t.Fatalf("restart: loaded %d, reused %d; want v2 reused and nothing loaded", l, r)
	}
	if val, name, err := h2.get("db", "", "key-000005"); err != nil || name != "v2" || val != "value-5-v2" {
		t.Fatalf("got %q from %s, %v; want v2's value", val, name, err)
	}
}

// In cluster mode (Gated) a node whose newest version waits for the
// cluster also loads the next older one, so that the cluster can serve it
// if another node failed the newest.
func TestGatedLoadsFallbackWhileNewestWaits(t *testing.T) {
	root := t.TempDir()
	writeV(t, root, "db", "v1")
	writeV(t, root, "db", "v2")
	h := start(t, root, t.TempDir(), func(o *Options) { o.Hooks.Gated = true; o.FallbackAfter = 200 * time.Millisecond })
	h.waitState("db", "v2", wire.StateBuilding)
	waitFor(t, "v1 loaded beside v2", func() bool {
		return h.m.Views().HeldPartitions("db", "v1") != nil && h.m.Views().HeldPartitions("db", "v2") != nil
	})
	if err := h.m.Activate("db", "v1"); err != nil {
		t.Fatal(err)
	}
	h.waitState("db", "v1", wire.StateActive)
	// Once the newest is complete and active, the fallback is replaced.
	if err := h.m.Activate("db", "v2"); err != nil {
		t.Fatal(err)
	}
	h.waitState("db", "v2", wire.StateActive)
	h.waitState("db", "v1", wire.StateRemoving)
}

// A version is not loaded while its files still change; _SUCCESS says
// they will not.
func TestSettleTime(t *testing.T) {
	root := t.TempDir()
	writeV(t, root, "db", "v1")
	os.Remove(filepath.Join(root, "db", "v1", "_SUCCESS"))
	h := start(t, root, t.TempDir(), func(o *Options) { o.SettleTime = 300 * time.Millisecond })
	// Fresh files: the first scan only watches them; a later scan, once
	// they have not changed for the settle time, loads them.
	if st := h.state("db", "v1"); st != "" && st != wire.StateSettling {
		t.Fatalf("v1 written just now is %s before settling", st)
	}
	h.waitState("db", "v1", wire.StateActive)

	writeV(t, root, "db", "v2") // with _SUCCESS
	h.m.Scan(context.Background())
	if st := h.state("db", "v2"); st == "" {
		t.Fatal("v2 with _SUCCESS was not loaded at once")
	}
	h.waitState("db", "v2", wire.StateActive)
}

// A loaded version whose file list changes is loaded again.
func TestReloadWhenFilesChange(t *testing.T) {
	root := t.TempDir()
	writeV(t, root, "db", "v1")
	aside := filepath.Join(t.TempDir(), "part-00002")
	if err := os.Rename(filepath.Join(root, "db", "v1", "part-00002"), aside); err != nil {
		t.Fatal(err)
	}
	h := start(t, root, t.TempDir(), nil)
	h.waitState("db", "v1", wire.StateActive)
	if n := h.m.Views().Status("db")["db"].Versions["v1"].NumPartitions; n != 2 {
		t.Fatalf("half-copied v1 has %d partitions", n)
	}
	if err := os.Rename(aside, filepath.Join(root, "db", "v1", "part-00002")); err != nil {
		t.Fatal(err)
	}
	h.m.Scan(context.Background())
	waitFor(t, "v1 reloaded with 3 partitions", func() bool {
		st := h.m.Views().Status("db")["db"].Versions["v1"]
		return st.State == wire.StateActive && st.NumPartitions == 3
	})
	for i := 0; i < 300; i += 37 {
		key := fmt.Sprintf("key-%06d", i)
		if val, _, err := h.get("db", "", key); err != nil || val != fmt.Sprintf("value-%d-v1", i) {
			t.Fatalf("%s after reload: %q, %v", key, val, err)
		}
	}
}

// A data file that cannot be read fails the version, naming the file,
// and the previous version keeps serving.
func TestUnreadableFileFailsVersion(t *testing.T) {
	root := t.TempDir()
	writeV(t, root, "db", "v1")
	h := start(t, root, t.TempDir(), nil)
	h.waitState("db", "v1", wire.StateActive)
	writeV(t, root, "db", "v2")
	outside := filepath.Join(t.TempDir(), "elsewhere")
	os.WriteFile(outside, []byte("x"), 0o644)
	bad := filepath.Join(root, "db", "v2", "part-00001")
	os.Remove(bad)
	if err := os.Symlink(outside, bad); err != nil {
		t.Fatal(err)
	}
	h.m.Refresh()
	h.waitState("db", "v2", wire.StateError)
	if r := h.m.Views().Health()["db"]["v2"].Reason; !strings.Contains(r, "part-00001") {
		t.Fatalf("reason %q does not name the file", r)
	}
	if val, name, err := h.get("db", "", "key-000001"); err != nil || name != "v1" || val != "value-1-v1" {
		t.Fatalf("after bad v2: %q from %s, %v", val, name, err)
	}
}
