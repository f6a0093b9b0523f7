package versions

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"spangle/shared/dbver"
	"spangle/shared/seqfile"
	"spangle/shared/wire"
	"spangle/storaged/internal/testutil"
)

// A copy that keeps file times (rsync -a, cp -p: a temporary hidden name,
// then a rename, the source's old mtime kept), one file at a time: the
// version is not loaded until its file list has stayed the same for the
// settle time as this node saw it, and shows as SETTLING meanwhile
// (issue #25, defect 2; #26).
func TestSettleIgnoresKeptFileTimes(t *testing.T) {
	root := t.TempDir()
	writeV(t, root, "db", "v1")
	const settle = 2 * time.Second
	h := start(t, root, t.TempDir(), func(o *Options) { o.SettleTime = settle })
	h.waitState("db", "v1", wire.StateActive)

	// v2 as the job wrote it, an hour ago, elsewhere.
	src := testutil.WriteVersion(t, t.TempDir(), "db", "v2", 3, testutil.Sharded, seqfile.WriterOptions{}, testutil.Records(300, "v2"))
	old := time.Now().Add(-time.Hour)
	dst := filepath.Join(root, "db", "v2")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		name := fmt.Sprintf("part-%05d", i)
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		tmp := filepath.Join(dst, "."+name+".XXXXXX")
		if err := os.WriteFile(tmp, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(tmp, old, old); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dst, name)); err != nil {
			t.Fatal(err)
		}
		h.m.Scan(context.Background())
		if st := h.m.Views().Health()["db"]["v2"]; st.State != wire.StateSettling || st.Reason == "" {
			t.Fatalf("v2 with %d of 3 files copied: %+v, want SETTLING with a reason", i+1, st)
		}
		if st := h.m.Views().Status("db")["db"].Versions["v2"]; st.State != wire.StateSettling || st.NumPartitions != i+1 {
			t.Fatalf("status of v2 with %d of 3 files copied: %+v", i+1, st)
		}
		if val, name, err := h.get("db", "", "key-000001"); err != nil || name != "v1" || val != "value-1-v1" {
			t.Fatalf("while v2 is copied: %q from %s, %v", val, name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Unchanged for the settle time from now: v2 loads whole.
	h.waitState("db", "v2", wire.StateActive)
	if n := h.m.Views().Status("db")["db"].Versions["v2"].NumPartitions; n != 3 {
		t.Fatalf("v2 active with %d of 3 partitions", n)
	}
	for i := 0; i < 300; i++ {
		key := fmt.Sprintf("key-%06d", i)
		if val, _, err := h.get("db", "", key); err != nil || val != fmt.Sprintf("value-%d-v2", i) {
			t.Fatalf("%s: %q, %v", key, val, err)
		}
	}
}

// A restart does not wait out the settle time for what the local store
// holds complete from the same files.
func TestSettleSkippedForLocalCopy(t *testing.T) {
	root := t.TempDir()
	writeV(t, root, "db", "v1")
	os.Remove(filepath.Join(root, "db", "v1", "_SUCCESS"))
	storeDir := t.TempDir()
	h := start(t, root, storeDir, func(o *Options) { o.SettleTime = 200 * time.Millisecond })
	h.waitState("db", "v1", wire.StateActive)
	waitFor(t, "v1 durable", func() bool {
		man, err := h.store.ReadManifest(dbver.Of("db", "v1"))
		return err == nil && man.Complete
	})
	h.stop()
	h2 := start(t, root, storeDir, func(o *Options) { o.SettleTime = time.Hour })
	h2.waitState("db", "v1", wire.StateActive)
}
