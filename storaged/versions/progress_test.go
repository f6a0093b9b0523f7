package versions

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"spangle/shared/source"
	"spangle/shared/wire"
	"spangle/storaged/internal/testutil"
)

// gatedOpen is a real source root whose Open of one file waits for the
// test, so that a load can be looked at half done.
type gatedOpen struct {
	source.Source
	name   string
	opened chan struct{}
	gate   chan struct{}
}

func (g *gatedOpen) Open(ctx context.Context, db, version, name string) (io.ReadCloser, error) {
	if name == g.name {
		select {
		case <-g.opened:
		default:
			close(g.opened)
		}
		select {
		case <-g.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return g.Source.Open(ctx, db, version, name)
}

// observed returns a logger that writes to the test log and to logs.
func observed(t *testing.T) (*zap.Logger, *observer.ObservedLogs) {
	core, logs := observer.New(zapcore.InfoLevel)
	tl := zaptest.NewLogger(t, zaptest.WrapOptions(zap.Development()))
	return zap.New(zapcore.NewTee(tl.Core(), core), zap.Development()), logs
}

func fieldsOf(e observer.LoggedEntry) map[string]any { return e.ContextMap() }

func TestLoadProgressShownAndLogged(t *testing.T) {
	root := t.TempDir()
	writeV(t, root, "db", "v1")
	src, files := testutil.OpenVersion(t, root, "db", "v1")
	var total int64
	for _, f := range files {
		total += f.Size
	}
	g := &gatedOpen{Source: src, name: files[2].Name, opened: make(chan struct{}), gate: make(chan struct{})}
	log, logs := observed(t)
	reg := prometheus.NewRegistry()
	h := start(t, root, t.TempDir(), func(o *Options) {
		o.Source = g
		o.Log = log
		o.Registerer = reg
		o.Loader.Parallel = 1
		o.ProgressEvery = 10 * time.Millisecond
	})
	<-g.opened // two of three files read; the third waits
	hz := h.m.Views().Health()["db"]["v1"]
	p := hz.Progress
	if hz.State != wire.StateBuilding || p == nil {
		t.Fatalf("healthz while loading: %+v", hz)
	}
	if p.FilesDone != 2 || p.FilesTotal != 3 || p.BytesTotal != total || p.BytesDone <= 0 || p.BytesDone >= total ||
		p.Records <= 0 || p.PreshardedFiles != 2 || p.SpreadFiles != 0 || p.Started.IsZero() {
		t.Fatalf("progress while loading: %+v (files of %d bytes)", p, total)
	}
	if sp := h.m.Views().Status("db")["db"].Versions["v1"].Progress; sp == nil || sp.FilesDone != 2 || sp.BytesTotal != total {
		t.Fatalf("status progress while loading: %+v", sp)
	}
	waitFor(t, "a progress log line", func() bool {
		for _, e := range logs.FilterMessage("load progress").All() {
			if f := fieldsOf(e); f["files_done"] == int64(2) && f["files_total"] == int64(3) && f["bytes_total"] == total {
				return true
			}
		}
		return false
	})
	close(g.gate)
	h.waitState("db", "v1", wire.StateActive)
	if p := h.m.Views().Health()["db"]["v1"].Progress; p != nil {
		t.Fatalf("active version still shows progress %+v", p)
	}
	loaded := logs.FilterMessage("version loaded").All()
	if len(loaded) != 1 {
		t.Fatalf("%d version loaded lines", len(loaded))
	}
	f := fieldsOf(loaded[0])
	if f["records"] != int64(testKeys) || f["bytes"] != total || f["how"] != "loaded" {
		t.Fatalf("version loaded line: %v; want %d records, %d bytes", f, testKeys, total)
	}
	if _, ok := f["took"]; !ok {
		t.Fatalf("version loaded line without took: %v", f)
	}
	// The load's metrics carry the db.
	got := gathered(t, reg)
	if got[`spangle_storaged_db_records_loaded_total{db="db"}`] != testKeys ||
		got[`spangle_storaged_db_bytes_loaded_total{db="db"}`] != float64(total) ||
		got[`spangle_storaged_db_version_loads_total{db="db",result="loaded"}`] != 1 ||
		got[`spangle_storaged_db_last_load_duration_seconds{db="db"}`] <= 0 {
		t.Fatalf("per-db metrics: %v", got)
	}
	// They leave with the db.
	if err := os.RemoveAll(filepath.Join(root, "db")); err != nil {
		t.Fatal(err)
	}
	h.m.Refresh()
	waitFor(t, "db's metrics gone", func() bool {
		for k := range gathered(t, reg) {
			if strings.HasPrefix(k, "spangle_storaged_db_") {
				return false
			}
		}
		return true
	})
}

// The wait for the cluster to decide a node's partitions is reported
// apart from the load's own time.
func TestLoadTookLeavesOutClusterWait(t *testing.T) {
	root := t.TempDir()
	writeV(t, root, "db", "v1")
	release := make(chan struct{})
	log, logs := observed(t)
	h := start(t, root, t.TempDir(), func(o *Options) {
		o.Log = log
		o.Hooks = Hooks{Held: heldOnRelease(release)}
	})
	waitFor(t, "v1 waiting for the cluster", func() bool {
		return h.m.Views().Health()["db"]["v1"].Reason == reasonWaitingForCluster
	})
	if p := h.m.Views().Health()["db"]["v1"].Progress; p != nil {
		t.Fatalf("progress before the load reads anything: %+v", p)
	}
	const wait = 500 * time.Millisecond
	since := time.Now()
	waitFor(t, "the cluster's wait", func() bool { return time.Since(since) > wait })
	close(release)
	h.waitState("db", "v1", wire.StateActive)
	loaded := logs.FilterMessage("version loaded").All()
	if len(loaded) != 1 {
		t.Fatalf("%d version loaded lines", len(loaded))
	}
	f := fieldsOf(loaded[0])
	cw, _ := f["cluster_wait"].(time.Duration)
	took, _ := f["took"].(time.Duration)
	// From "loading version" to "version loaded" is the wait and the load
	// one after the other: took is what remains without the wait, however
	// slow a busy machine makes the load itself.
	starts := logs.FilterMessage("loading version").All()
	if len(starts) != 1 {
		t.Fatalf("%d loading version lines", len(starts))
	}
	total := loaded[0].Time.Sub(starts[0].Time)
	if cw < wait || took <= 0 || took > total-cw+50*time.Millisecond {
		t.Fatalf("cluster_wait %v, took %v, %v from start to loaded: want the wait (over %v) apart from the load", cw, took, total, wait)
	}
	if s := h.m.Views().Status("db")["db"].Versions["v1"].LoadSeconds; s <= 0 || s > took.Seconds()+0.05 {
		t.Fatalf("status load_seconds %v is not the load's own time %v (the cluster's wait was %v)", s, took, cw)
	}
}

// gathered returns reg's counters and gauges by series, as the text
// exposition names them ({label="value",...} in label order).
func gathered(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+strconv.Quote(l.GetValue()))
			}
			sort.Strings(labels)
			name := mf.GetName()
			if len(labels) > 0 {
				name += "{" + strings.Join(labels, ",") + "}"
			}
			switch {
			case m.Counter != nil:
				out[name] = m.Counter.GetValue()
			case m.Gauge != nil:
				out[name] = m.Gauge.GetValue()
			}
		}
	}
	return out
}
