package versions

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"spangle/shared/seqfile"
	"spangle/shared/wire"
	"spangle/storaged/internal/testutil"
)

const rewriteKeys = 20000

// rewriteInPlace writes db/version again under root with the values of
// tag, each data file renamed over the old one, as a job that overwrites
// its output does.
func rewriteInPlace(t *testing.T, root, db, version, tag string) {
	t.Helper()
	tmp := t.TempDir()
	dir := testutil.WriteVersion(t, tmp, db, version, 3, testutil.Sharded, seqfile.WriterOptions{}, testutil.Records(rewriteKeys, tag))
	for i := 0; i < 3; i++ {
		name := fmt.Sprintf("part-%05d", i)
		if err := os.Rename(filepath.Join(dir, name), filepath.Join(root, db, version, name)); err != nil {
			t.Fatal(err)
		}
	}
}

// reader looks keys up without pause until stop is called, and counts
// the lookups that failed and those that answered the old value after
// the new one was seen.
type reader struct {
	failed, regressed, reads atomic.Int64
	firstErr                 atomic.Value
	stop                     func()
}

func startReader(h *harness, oldTag, newTag string) *reader {
	r := &reader{}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		sawNew := false
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			k := (i * 7919) % rewriteKeys
			val, _, err := h.get("db", "", fmt.Sprintf("key-%06d", k))
			r.reads.Add(1)
			switch {
			case err != nil:
				r.failed.Add(1)
				r.firstErr.CompareAndSwap(nil, err.Error())
			case val == fmt.Sprintf("value-%d-%s", k, newTag):
				sawNew = true
			case val == fmt.Sprintf("value-%d-%s", k, oldTag):
				if sawNew {
					r.regressed.Add(1)
				}
			default:
				r.failed.Add(1)
				r.firstErr.CompareAndSwap(nil, "unexpected value "+val)
			}
		}
	}()
	r.stop = func() { close(done); wg.Wait() }
	return r
}

// stopAndCheck stops r and fails the test if a lookup failed or went
// back to the old value.
func (r *reader) stopAndCheck(t *testing.T) {
	t.Helper()
	r.stop()
	if r.failed.Load() > 0 || r.regressed.Load() > 0 {
		t.Fatalf("%d of %d lookups failed (first: %v), %d went back to the old value",
			r.failed.Load(), r.reads.Load(), r.firstErr.Load(), r.regressed.Load())
	}
}

// Rewriting the files of the only served version in place: the copy
// loaded before answers every lookup until the copy built from the new
// files is swapped in, and none after (issue #25, defect 1).
func TestRewriteInPlaceKeepsServing(t *testing.T) {
	root := t.TempDir()
	testutil.WriteVersion(t, root, "db", "v1", 3, testutil.Sharded, seqfile.WriterOptions{}, testutil.Records(rewriteKeys, "old"))
	storeDir := t.TempDir()
	h := start(t, root, storeDir, nil)
	h.waitState("db", "v1", wire.StateActive)

	r := startReader(h, "old", "new")
	rewriteInPlace(t, root, "db", "v1", "new")
	h.m.Scan(context.Background())
	waitFor(t, "the rewritten values served", func() bool {
		val, _, err := h.get("db", "", "key-000001")
		return err == nil && val == "value-1-new"
	})
	r.stopAndCheck(t)
	if st := h.m.Views().Health()["db"]["v1"]; st.State != wire.StateActive || st.Reason != "" {
		t.Fatalf("after the rebuild v1 is %+v", st)
	}
	// The replaced copy and the rebuild directory go; the manifest names
	// the new files, so a restart reuses the rebuilt copy.
	waitFor(t, "only the version's directory left", func() bool {
		ents, _ := os.ReadDir(filepath.Join(storeDir, "db"))
		return len(ents) == 1 && ents[0].Name() == "v1"
	})
	h.stop()
	h2 := start(t, root, storeDir, nil)
	h2.waitState("db", "v1", wire.StateActive)
	if _, reused, _ := h2.m.Views().Counts(); reused != 1 {
		t.Fatalf("the rebuilt copy was not reused after a restart (reused %d)", reused)
	}
	if val, _, err := h2.get("db", "", "key-000002"); err != nil || val != "value-2-new" {
		t.Fatalf("after a restart: %q, %v", val, err)
	}
}

// A rewrite that cannot be loaded leaves the copy loaded before serving,
// with the failure on /healthz; a good rewrite later is swapped in.
func TestRewriteInPlaceBrokenKeepsServing(t *testing.T) {
	root := t.TempDir()
	testutil.WriteVersion(t, root, "db", "v1", 3, testutil.Sharded, seqfile.WriterOptions{}, testutil.Records(rewriteKeys, "old"))
	h := start(t, root, t.TempDir(), nil)
	h.waitState("db", "v1", wire.StateActive)

	r := startReader(h, "old", "new")
	bad := filepath.Join(root, "db", "v1", "part-00001")
	if err := os.WriteFile(bad+".tmp", []byte("not a sequence file at all"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(bad+".tmp", bad); err != nil {
		t.Fatal(err)
	}
	h.m.Scan(context.Background())
	waitFor(t, "the failed rebuild shown", func() bool {
		return strings.Contains(h.m.Views().Health()["db"]["v1"].Reason, "failed")
	})
	if st := h.m.Views().Health()["db"]["v1"]; st.State != wire.StateActive {
		t.Fatalf("v1 after a broken rewrite: %+v", st)
	}
	if val, _, err := h.get("db", "", "key-000003"); err != nil || val != "value-3-old" {
		t.Fatalf("after a broken rewrite: %q, %v", val, err)
	}

	rewriteInPlace(t, root, "db", "v1", "new")
	h.m.Scan(context.Background())
	waitFor(t, "the good rewrite served", func() bool {
		val, _, err := h.get("db", "", "key-000001")
		return err == nil && val == "value-1-new"
	})
	r.stopAndCheck(t)
	if st := h.m.Views().Health()["db"]["v1"]; st.State != wire.StateActive || st.Reason != "" {
		t.Fatalf("after the good rewrite v1 is %+v", st)
	}
}
