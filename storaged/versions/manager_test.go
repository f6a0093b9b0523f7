package versions

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"spangle/shared/dbver"
	"spangle/shared/partitioner"
	"spangle/shared/seqfile"
	"spangle/shared/wire"
	"spangle/storaged/internal/testutil"
	"spangle/storaged/store"
)

type harness struct {
	t     *testing.T
	root  string
	store *store.Store
	m     *Manager
	reg   *prometheus.Registry // the manager's metrics, unless the test set its own
	stop  func()
}

// start runs a Manager over root with the given store directory.
func start(t *testing.T, root, storeDir string, mod func(*Options)) *harness {
	t.Helper()
	src, st := testutil.OpenStore(t, root, storeDir)
	// A development logger panics on DPanic: an illegal state transition
	// (Manager.toLocked) fails the test.
	opts := Options{Source: src, Store: st, Log: zaptest.NewLogger(t, zaptest.WrapOptions(zap.Development()))}
	opts.Loader.Build.NoSync = true
	reg := prometheus.NewRegistry()
	opts.Registerer = reg
	if mod != nil {
		mod(&opts)
	}
	m, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	var once sync.Once
	h := &harness{t: t, root: root, store: st, m: m, reg: reg, stop: func() { once.Do(func() { cancel(); <-done }) }}
	t.Cleanup(h.stop)
	return h
}

// metric returns the value of a counter or gauge series of the manager,
// named as the text exposition names it.
func (h *harness) metric(series string) float64 {
	h.t.Helper()
	return gathered(h.t, h.reg)[series]
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (h *harness) state(db, version string) string {
	return h.m.Views().Health()[db][version].State
}

func (h *harness) waitState(db, version, state string) {
	h.t.Helper()
	waitFor(h.t, db+"/"+version+" "+state, func() bool { return h.state(db, version) == state })
}

func (h *harness) get(db, pinned, key string) (string, string, error) {
	v, err := h.m.Acquire(db, pinned)
	if err != nil {
		return "", "", err
	}
	defer v.Release()
	val, err := v.Get(nil, []byte(key))
	return string(val), v.Name, err
}

func writeV(t *testing.T, root, db, version string) {
	testutil.WriteVersion(t, root, db, version, 3, testutil.Sharded, seqfile.WriterOptions{}, testutil.Records(300, version))
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.Walk(from, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if fi.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestUnhealthyNextToHealthy(t *testing.T) {
	td := testutil.TestData(t)
	root := t.TempDir()
	copyDir(t, filepath.Join(td, "healthy", "baby-names"), filepath.Join(root, "baby-names"))
	copyDir(t, filepath.Join(td, "unhealthy", "baby-names-bad"), filepath.Join(root, "baby-names-bad"))
	h := start(t, root, t.TempDir(), nil)
	h.waitState("baby-names", "1", wire.StateActive)
	h.waitState("baby-names-bad", "1", wire.StateError)
	reason := h.m.Views().Health()["baby-names-bad"]["1"].Reason
	if !strings.Contains(reason, "baby-names-bad/1/part-00000") || !strings.Contains(reason, "byte") {
		t.Fatalf("reason %q should name the file and offset", reason)
	}
	if val, _, err := h.get("baby-names", "", "1881/boy"); err != nil || val != "John" {
		t.Fatalf("1881/boy = %q, %v", val, err)
	}
	if _, err := h.m.Acquire("baby-names-bad", ""); !errors.Is(err, ErrNoDB) {
		t.Fatalf("bad db: %v", err)
	}
	// The failure is published before its files are removed (the
	// removal runs outside the manager's lock), so give it a moment.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		list, _ := h.store.List()
		if len(list["baby-names-bad"]) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("failed version left on disk: %v", list)
		}
	}
}

func TestCorruptNewVersionKeepsOldServing(t *testing.T) {
	root := t.TempDir()
	writeV(t, root, "db", "v1")
	h := start(t, root, t.TempDir(), nil)
	h.waitState("db", "v1", wire.StateActive)
	dir := filepath.Join(root, "db", "v2")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "part-00000"), []byte("SEQ\x06garbage"), 0o644)
	h.m.Refresh()
	h.waitState("db", "v2", wire.StateError)
	if val, name, err := h.get("db", "", "key-000001"); err != nil || name != "v1" || val != "value-1-v1" {
		t.Fatalf("after bad v2: %q from %s, %v", val, name, err)
	}
	if _, err := h.m.Acquire("db", "v2"); !errors.Is(err, ErrVersionNotHeld) {
		t.Fatalf("pinned bad version: %v", err)
	}
	// Fixing the version in the source makes the next scan try again.
	os.RemoveAll(dir)
	writeV(t, root, "db", "v2")
	h.m.Refresh()
	h.waitState("db", "v2", wire.StateActive)
}

func TestNewVersionRetentionAndDeletion(t *testing.T) {
	root := t.TempDir()
	writeV(t, root, "db", "v1")
	h := start(t, root, t.TempDir(), func(o *Options) { o.Retention = 300 * time.Millisecond; o.RefreshPeriod = 20 * time.Millisecond })
	h.waitState("db", "v1", wire.StateActive)
	if st := h.m.Views().Status("db")["db"].Versions["v1"]; st.Activated.IsZero() || st.LoadSeconds <= 0 {
		t.Fatalf("v1 status %+v: want its load time and activation", st)
	}
	writeV(t, root, "db", "v2")
	h.waitState("db", "v2", wire.StateActive) // picked up by the refresh period
	if v1, v2 := h.m.Views().Status("db")["db"].Versions["v1"], h.m.Views().Status("db")["db"].Versions["v2"]; !v2.Activated.After(v1.Activated) {
		t.Fatalf("v2 activated at %v, not after v1 at %v", v2.Activated, v1.Activated)
	}
	if h.state("db", "v1") != wire.StateRemoving {
		t.Fatalf("v1 is %s, want REMOVING while retained", h.state("db", "v1"))
	}
	if val, _, err := h.get("db", "", "key-000002"); err != nil || val != "value-2-v2" {
		t.Fatalf("current: %q, %v", val, err)
	}
	// Pinned requests keep v1 alive past its retention...
	for i := 0; i < 8; i++ {
		if val, _, err := h.get("db", "v1", "key-000002"); err != nil || val != "value-2-v1" {
			t.Fatalf("pinned v1: %q, %v", val, err)
		}
		time.Sleep(60 * time.Millisecond)
	}
	// ...then it goes, from memory and disk.
	// (Polling must not pin v1, or it would stay.)
	waitFor(t, "v1 deleted", func() bool { return h.state("db", "v1") == "" })
	if _, _, err := h.get("db", "v1", "key-000002"); !errors.Is(err, ErrVersionNotHeld) {
		t.Fatalf("pinned v1 after deletion: %v", err)
	}
	if _, err := os.Stat(h.store.VersionDir(dbver.Of("db", "v1"))); !os.IsNotExist(err) {
		t.Fatalf("v1 still on disk: %v", err)
	}
}

func TestRestartReusesLocalStore(t *testing.T) {
	root := t.TempDir()
	writeV(t, root, "db", "v1")
	writeV(t, root, "other", "v1")
	storeDir := t.TempDir()
	h := start(t, root, storeDir, nil)
	h.waitState("db", "v1", wire.StateActive)
	h.waitState("other", "v1", wire.StateActive)
	h.stop()
	if l, r, _ := h.m.Views().Counts(); l != 2 || r != 0 {
		t.Fatalf("first run: loaded %d reused %d", l, r)
	}

	// A half-written version of "other" (manifest not complete) and a
	// stray version nobody wants.
	st, _ := store.Open(storeDir)
	man, err := st.ReadManifest(dbver.Of("other", "v1"))
	if err != nil {
		t.Fatal(err)
	}
	man.Complete = false
	st.WriteManifest(man)
	os.MkdirAll(st.VersionDir(dbver.Of("db", "v0")), 0o755)

	h2 := start(t, root, storeDir, nil)
	h2.waitState("db", "v1", wire.StateActive)
	h2.waitState("other", "v1", wire.StateActive)
	if l, r, _ := h2.m.Views().Counts(); l != 1 || r != 1 {
		t.Fatalf("restart: loaded %d reused %d; want db reused and other reloaded", l, r)
	}
	// The status tells which was built here, how long it took, and when
	// each became active.
	st1, st2 := h2.m.Views().Status("")["db"].Versions["v1"], h2.m.Views().Status("")["other"].Versions["v1"]
	if st1.LoadSeconds != 0 || st2.LoadSeconds <= 0 || st1.Activated.IsZero() || st2.Activated.IsZero() {
		t.Fatalf("status after restart: db/v1 %+v, other/v1 %+v; want db reused (no load time), other loaded, both activated", st1, st2)
	}
	if val, _, err := h2.get("other", "", "key-000003"); err != nil || val != "value-3-v1" {
		t.Fatalf("reloaded: %q, %v", val, err)
	}
	if _, err := os.Stat(st.VersionDir(dbver.Of("db", "v0"))); !os.IsNotExist(err) {
		t.Fatalf("stray local version kept: %v", err)
	}
}

func TestDBRemovedFromSource(t *testing.T) {
	root := t.TempDir()
	writeV(t, root, "db", "v1")
	writeV(t, root, "keep", "v1")
	h := start(t, root, t.TempDir(), nil)
	h.waitState("db", "v1", wire.StateActive)
	h.waitState("keep", "v1", wire.StateActive)
	os.RemoveAll(filepath.Join(root, "db"))
	h.m.Refresh()
	waitFor(t, "db gone", func() bool {
		_, _, err := h.get("db", "", "key-000002")
		_, known := h.m.Views().Health()["db"]
		return errors.Is(err, ErrNoDB) && !known
	})
	waitFor(t, "db deleted locally", func() bool {
		_, err := os.Stat(filepath.Join(h.store.Root(), "db"))
		return os.IsNotExist(err)
	})
	if _, _, err := h.get("keep", "", "key-000001"); err != nil {
		t.Fatalf("other db disturbed: %v", err)
	}
}

func TestClusterHooks(t *testing.T) {
	root := t.TempDir()
	writeV(t, root, "db", "v1")
	var mu sync.Mutex
	var ready []int
	var removed []string
	h := start(t, root, t.TempDir(), func(o *Options) {
		o.Retention = time.Millisecond
		o.Hooks = Hooks{
			Held:  func(_ context.Context, db, version string, n int) ([]int, error) { return []int{1}, nil },
			Gated: true,
			PartitionReady: func(db, version string, p, n int) {
				mu.Lock()
				ready = append(ready, p)
				mu.Unlock()
			},
			BeforeRemove: func(db, version string, parts []int) {
				mu.Lock()
				removed = append(removed, version)
				mu.Unlock()
			},
		}
	})
	waitFor(t, "partition ready", func() bool { mu.Lock(); defer mu.Unlock(); return len(ready) == 1 })
	if st := h.state("db", "v1"); st != wire.StateBuilding {
		t.Fatalf("gated version is %s before Activate", st)
	}
	if _, err := h.m.Acquire("db", ""); !errors.Is(err, ErrNoDB) {
		t.Fatalf("gated version answers unpinned requests: %v", err)
	}
	// Pinned requests are answered, for the held partition only.
	for _, r := range testutil.Records(50, "v1") {
		val, _, err := h.get("db", "v1", string(r.Key))
		if partitioner.Partition(r.Key, 3) == 1 {
			if err != nil || val != string(r.Value) {
				t.Fatalf("%s: %q, %v", r.Key, val, err)
			}
		} else if !errors.Is(err, ErrPartitionNotHeld) {
			t.Fatalf("%s: %v, want ErrPartitionNotHeld", r.Key, err)
		}
	}
	if err := h.m.Activate("db", "v1"); err != nil {
		t.Fatal(err)
	}
	h.waitState("db", "v1", wire.StateActive)
	if err := h.m.Activate("db", "nope"); !errors.Is(err, ErrVersionNotHeld) {
		t.Fatalf("Activate unknown: %v", err)
	}
	writeV(t, root, "db", "v2")
	h.m.Refresh()
	waitFor(t, "v2 loaded", func() bool { return h.m.Views().Health()["db"]["v2"].Reason != "" })
	h.m.Activate("db", "v2")
	waitFor(t, "v1 removed", func() bool { mu.Lock(); defer mu.Unlock(); return len(removed) == 1 && removed[0] == "v1" })
}

func TestHeldHookWaitsAndFails(t *testing.T) {
	root := t.TempDir()
	writeV(t, root, "db", "v1")
	release := make(chan struct{})
	h := start(t, root, t.TempDir(), func(o *Options) {
		o.Hooks = Hooks{Held: func(ctx context.Context, db, version string, n int) ([]int, error) {
			if version == "v2" {
				return nil, errors.New("partition count differs")
			}
			return heldOnRelease(release)(ctx, db, version, n)
		}}
	})
	waitFor(t, "v1 waiting for the cluster", func() bool {
		return h.m.Views().Health()["db"]["v1"].Reason == reasonWaitingForCluster
	})
	if st := h.state("db", "v1"); st != wire.StateBuilding {
		t.Fatalf("v1 is %s while Held blocks", st)
	}
	close(release)
	h.waitState("db", "v1", wire.StateActive)
	if r := h.m.Views().Health()["db"]["v1"].Reason; r != "" {
		t.Fatalf("active v1 still shows reason %q", r)
	}
	// A failing Held fails the version; the previous one keeps serving.
	writeV(t, root, "db", "v2")
	h.m.Refresh()
	h.waitState("db", "v2", wire.StateError)
	if r := h.m.Views().Health()["db"]["v2"].Reason; !strings.Contains(r, "partition count differs") {
		t.Fatalf("v2's reason %q", r)
	}
	if h.m.CurrentVersion("db") != "v1" {
		t.Fatalf("current version %q after v2 failed", h.m.CurrentVersion("db"))
	}
}

// A version serves as soon as it is built; its manifest says complete
// (so a restart reuses it) only once its files are synced.
func TestManifestCompleteAfterSync(t *testing.T) {
	root := t.TempDir()
	writeV(t, root, "db", "v1")
	h := start(t, root, t.TempDir(), func(o *Options) { o.Loader.Build.NoSync = false })
	h.waitState("db", "v1", wire.StateActive)
	waitFor(t, "manifest complete", func() bool {
		man, err := h.store.ReadManifest(dbver.Of("db", "v1"))
		return err == nil && man.Complete
	})
	man, _ := h.store.ReadManifest(dbver.Of("db", "v1"))
	if len(man.Partitions) != 3 || man.Loaded.IsZero() {
		t.Fatalf("manifest: %+v", man)
	}
}

// A version whose db leaves the source right after it was built, while
// its files may still be syncing, is deleted with nothing left behind (no
// manifest written into its deleted directory).
func TestRemovedWhileSyncing(t *testing.T) {
	for i := 0; i < 5; i++ {
		root := t.TempDir()
		writeV(t, root, "db", "v1")
		h := start(t, root, t.TempDir(), func(o *Options) { o.Loader.Build.NoSync = false })
		h.waitState("db", "v1", wire.StateActive)
		os.RemoveAll(filepath.Join(root, "db"))
		h.m.Refresh()
		waitFor(t, "db deleted locally", func() bool {
			_, err := os.Stat(filepath.Join(h.store.Root(), "db"))
			return os.IsNotExist(err)
		})
		h.stop()
		if _, err := os.Stat(filepath.Join(h.store.Root(), "db")); !os.IsNotExist(err) {
			t.Fatalf("round %d: the removed db is back on disk: %v", i, err)
		}
	}
}

// A newest version whose directory holds no data file yet (a job still
// writing it, with no _SUCCESS required) is not loaded, so it does not
// fail: the previous version keeps serving, and the new one loads once
// its files are there.
func TestVersionWithoutFilesYet(t *testing.T) {
	root := t.TempDir()
	writeV(t, root, "db", "v1")
	h := start(t, root, t.TempDir(), nil)
	h.waitState("db", "v1", wire.StateActive)
	if err := os.MkdirAll(filepath.Join(root, "db", "v2"), 0o755); err != nil {
		t.Fatal(err)
	}
	h.m.Scan(context.Background())
	if st := h.state("db", "v2"); st != "" {
		t.Fatalf("v2 without files is %s", st)
	}
	if val, _, err := h.get("db", "", "key-000002"); err != nil || val != "value-2-v1" {
		t.Fatalf("v1 disturbed: %q, %v", val, err)
	}
	os.Remove(filepath.Join(root, "db", "v2"))
	writeV(t, root, "db", "v2")
	h.m.Scan(context.Background())
	h.waitState("db", "v2", wire.StateActive)
}

// heldOnRelease is a Hooks.Held that holds partitions 0, 1 and 2 once
// release is closed, as a cluster that has not decided yet.
func heldOnRelease(release <-chan struct{}) func(ctx context.Context, db, version string, n int) ([]int, error) {
	return func(ctx context.Context, db, version string, n int) ([]int, error) {
		select {
		case <-release:
			return []int{0, 1, 2}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
