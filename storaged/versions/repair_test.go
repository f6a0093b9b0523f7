package versions

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"spangle/shared/dbver"
	"spangle/shared/partitioner"
	"spangle/shared/wire"
	"spangle/storaged/internal/testutil"
)

// value reads a counter or gauge.
func value(m prometheus.Metric) float64 {
	var d dto.Metric
	if err := m.Write(&d); err != nil {
		panic(err)
	}
	if d.Counter != nil {
		return d.Counter.GetValue()
	}
	return d.Gauge.GetValue()
}

// testKeys is how many keys writeV writes (3 partitions).
const testKeys = 300

// keysOf returns the keys of partition p of writeV's versions, ascending.
func keysOf(p int) []string {
	var out []string
	for i := 0; i < testKeys; i++ {
		k := fmt.Sprintf("key-%06d", i)
		if partitioner.Partition([]byte(k), 3) == p {
			out = append(out, k)
		}
	}
	return out
}

// readers looks every key of db/v1 up from several goroutines until
// stopped, as requests would while a partition is rebuilt and swapped:
// each lookup must answer the right value or ErrPartitionCorrupt, never
// another error, a wrong value or a closed partition.
type readers struct {
	stop          chan struct{}
	wg            sync.WaitGroup
	good, corrupt atomic.Int64
	mu            sync.Mutex
	first         error // guarded by mu
}

func startReaders(h *harness) *readers {
	r := &readers{stop: make(chan struct{})}
	for g := 0; g < 4; g++ {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			for i := g; ; i = (i + 4) % testKeys {
				select {
				case <-r.stop:
					return
				default:
				}
				val, _, err := h.get("db", "", fmt.Sprintf("key-%06d", i))
				switch {
				case errors.Is(err, ErrPartitionCorrupt):
					r.corrupt.Add(1)
				case err == nil && val == fmt.Sprintf("value-%d-v1", i):
					r.good.Add(1)
				default:
					r.mu.Lock()
					if r.first == nil {
						r.first = fmt.Errorf("key %d: %q, %v", i, val, err)
					}
					r.mu.Unlock()
				}
			}
		}()
	}
	return r
}

func (r *readers) end(t *testing.T) {
	t.Helper()
	close(r.stop)
	r.wg.Wait()
	if r.first != nil {
		t.Fatalf("a lookup during the repair: %v", r.first)
	}
	if r.good.Load() == 0 || r.corrupt.Load() == 0 {
		t.Fatalf("%d good and %d corrupt lookups; want both", r.good.Load(), r.corrupt.Load())
	}
}

// A lookup that reads a corrupt block answers ErrPartitionCorrupt and
// marks the partition bad: /healthz and the status show it, the metrics
// count it, peers are not offered it, and the partition's other blocks
// keep answering. The partition is rebuilt (from a peer, checked, or
// from the source when the peer fails or gives a bad copy) and swapped in
// while readers run, under -race: afterwards every key answers again.
func TestCorruptBlockRebuilt(t *testing.T) {
	for _, tc := range []struct {
		name, peer, from string
	}{
		{"peer fails", "fail", fromSource},
		{"good peer", "good", fromPeer},
		{"peer copy corrupt too", "corrupt", fromSource},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			writeV(t, root, "db", "v1")
			release := make(chan struct{})
			var peerCopy string // written before release is closed
			var loaded atomic.Bool
			h := start(t, root, t.TempDir(), func(o *Options) {
				o.Loader.Build.BlockSize = 256 // several blocks per partition
				o.Hooks.CopyPartition = func(ctx context.Context, _ dbver.Partition, dir string) error {
					if !loaded.Load() {
						return ErrNoPeer // the first load: no other node serves v1 yet
					}
					select {
					case <-release:
					case <-ctx.Done():
						return ctx.Err()
					}
					if tc.peer == "fail" {
						return errors.New("no peer")
					}
					copyDir(t, peerCopy, dir)
					return nil
				}
			})
			h.waitState("db", "v1", wire.StateActive)
			loaded.Store(true)
			p := partitioner.Partition([]byte("key-000000"), 3)
			keys := keysOf(p)
			dir := h.store.PartitionDir(dbver.Of("db", "v1").Partition(p))
			peerCopy = t.TempDir()
			copyDir(t, dir, peerCopy)
			if tc.peer == "corrupt" {
				testutil.CorruptFirstBlock(t, peerCopy)
			}
			testutil.CorruptFirstBlock(t, dir)

			if _, _, err := h.get("db", "", keys[0]); !errors.Is(err, ErrPartitionCorrupt) {
				t.Fatalf("lookup in the corrupt block: %v, want ErrPartitionCorrupt", err)
			}
			rd := startReaders(h)
			waitFor(t, "the partition marked corrupt", func() bool {
				return reflect.DeepEqual(h.m.Views().Health()["db"]["v1"].CorruptPartitions, []int{p})
			})
			if hl := h.m.Views().Health()["db"]["v1"]; hl.State != wire.StateActive || hl.Reason == "" {
				t.Fatalf("health while rebuilding: %+v; want ACTIVE with a reason", hl)
			}
			if st := h.m.Views().Status("db")["db"].Versions["v1"]; !reflect.DeepEqual(st.CorruptPartitions, []int{p}) || len(st.Partitions) != 3 {
				t.Fatalf("status while rebuilding: %+v", st)
			}
			if _, ok := h.m.Views().PartitionDir(dbver.Of("db", "v1").Partition(p)); ok {
				t.Fatal("a corrupt partition is offered to peers")
			}
			if val, _, err := h.get("db", "", keys[len(keys)-1]); err != nil || val == "" {
				t.Fatalf("a key in a good block of the corrupt partition: %q, %v", val, err)
			}
			if got := h.metric(`spangle_storaged_partitions_corrupt_total{found_by="lookup"}`); got != 1 {
				t.Fatalf("corrupt partitions found by lookups: %v, want 1", got)
			}
			if got := h.metric("spangle_storaged_partitions_repairing"); got != 1 {
				t.Fatalf("partitions repairing: %v, want 1", got)
			}

			close(release)
			waitFor(t, "the partition rebuilt", func() bool {
				_, _, err := h.get("db", "", keys[0])
				return err == nil
			})
			rd.end(t)
			if hl := h.m.Views().Health()["db"]["v1"]; hl.CorruptPartitions != nil || hl.Reason != "" {
				t.Fatalf("health after the rebuild: %+v", hl)
			}
			for i, k := range keysOf(p) {
				if val, _, err := h.get("db", "", k); err != nil || val == "" {
					t.Fatalf("key %d of the rebuilt partition: %q, %v", i, val, err)
				}
			}
			if got := h.metric(`spangle_storaged_partition_repairs_total{result="` + tc.from + `"}`); got != 1 {
				t.Fatalf("repairs from %s: %v, want 1", tc.from, got)
			}
			if got := h.metric("spangle_storaged_partitions_repairing"); got != 0 {
				t.Fatalf("partitions repairing after the rebuild: %v", got)
			}
			if _, ok := h.m.Views().PartitionDir(dbver.Of("db", "v1").Partition(p)); !ok {
				t.Fatal("the rebuilt partition is not offered to peers")
			}
		})
	}
}

func rename(t *testing.T, from, to string) {
	t.Helper()
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
}

// A rebuild that fails (the source file gone) is tried again with the
// partition still marked, its reason saying why, until it succeeds.
func TestRebuildRetried(t *testing.T) {
	root := t.TempDir()
	writeV(t, root, "db", "v1")
	h := start(t, root, t.TempDir(), func(o *Options) { o.Repair.Retry = 20 * time.Millisecond })
	h.waitState("db", "v1", wire.StateActive)
	p := partitioner.Partition([]byte("key-000000"), 3)
	testutil.CorruptFirstBlock(t, h.store.PartitionDir(dbver.Of("db", "v1").Partition(p)))
	src := filepath.Join(root, "db", "v1")
	hidden := filepath.Join(root, "away")
	rename(t, src, hidden)
	if _, _, err := h.get("db", "", "key-000000"); !errors.Is(err, ErrPartitionCorrupt) {
		t.Fatalf("lookup in the corrupt block: %v", err)
	}
	waitFor(t, "a failed rebuild counted", func() bool {
		return h.metric(`spangle_storaged_partition_repairs_total{result="error"}`) >= 2
	})
	if hl := h.m.Views().Health()["db"]["v1"]; !reflect.DeepEqual(hl.CorruptPartitions, []int{p}) {
		t.Fatalf("health while the rebuild fails: %+v", hl)
	}
	rename(t, hidden, src)
	waitFor(t, "the partition rebuilt", func() bool {
		val, _, err := h.get("db", "", "key-000000")
		return err == nil && val == "value-0-v1"
	})
	if hl := h.m.Views().Health()["db"]["v1"]; hl.CorruptPartitions != nil {
		t.Fatalf("health after the rebuild: %+v", hl)
	}
}
