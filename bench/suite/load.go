package suite

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"time"

	"go.uber.org/zap"

	"spangle/bench/dataset"
	"spangle/bench/proc"
	"spangle/bench/report"
	"spangle/bench/stats"
)

// Targets of issue 2 for loading 1M records.
//
// loadTargetSeconds is issue 2's absolute bound for 1M uncompressed
// records. It is a target, not sequins' speed on this machine: built from
// its own source and run side by side on this machine kind (issue 17),
// sequins loaded the same 1M keys (8 uncompressed files, 100-byte values)
// in 0.65 s (0.63-0.78) against storaged's 0.37 s.
const (
	loadRatioTarget   = 2.0   // at most 2x decode-only
	loadTargetSeconds = 1.8   // seconds, 1M uncompressed records
	rssTargetMB       = 300.0 // MB, while loading and while serving 10M keys
)

// activeAt waits until storaged serves the dataset's version and returns
// when storaged made it ACTIVE (see proc.ActiveAt).
func activeAt(ctx context.Context, p *proc.Process) (time.Time, error) {
	return p.ActiveAt(ctx, dataset.DB, dataset.Version, 15*time.Minute)
}

// loadSection measures storaged loading ds two ways against decoding every
// record of ds, alternating: a storaged started on ds (process start to
// ACTIVE), and a running storaged that finds ds as a new version on a
// re-scan (SIGHUP to ACTIVE: what a cluster does at every new version). It
// also reports storaged's peak memory while loading.
func (b *bench) loadSection(ctx context.Context, ds *dataset.Dataset) {
	kind := "uncompressed"
	if ds.Options.Compression != 0 {
		kind = "block " + codecName(ds.Options.Codec)
	}
	keys := count(ds.Options.Keys)
	metric := fmt.Sprintf("load %s keys (%s): storaged start to ACTIVE", keys, kind)
	refreshMetric := fmt.Sprintf("load %s keys (%s): new version to ACTIVE on a running storaged", keys, kind)
	var loads, refreshes, decodes, peaks []float64
	for r := 0; r < b.o.Rounds && ctx.Err() == nil; r++ {
		var d, l, f time.Duration
		var mem proc.Memory
		var err error
		steps := []func() error{
			func() (err error) { d, err = b.decodeOnce(ctx, ds); return err },
			func() (err error) { l, mem, err = b.loadOnce(ctx, ds); return err },
			func() (err error) { f, err = b.refreshOnce(ctx, ds); return err },
		}
		// Each round starts with another of the three.
		for i := range steps {
			if err = steps[(i+r)%len(steps)](); err != nil {
				break
			}
		}
		if err != nil {
			b.failed(metric, err)
			return
		}
		b.log.Info("load round", zap.Int("round", r), zap.String("kind", kind), zap.Duration("storaged", l),
			zap.Duration("refresh", f), zap.Duration("decode", d), zap.Float64("peak_mb", proc.MB(mem.Peak)))
		loads = append(loads, l.Seconds())
		refreshes = append(refreshes, f.Seconds())
		decodes = append(decodes, d.Seconds())
		peaks = append(peaks, proc.MB(mem.Peak))
	}
	if len(loads) == 0 {
		return
	}
	abs := report.Target{Kind: report.ValueBelow, Limit: loadTargetSeconds}
	switch {
	case ds.Options.Compression != 0:
		abs.Skip = "the 1.8 s target is for uncompressed files"
	case ds.Options.Keys != 1_000_000:
		abs.Skip = "the 1.8 s target is for 1M records"
	}
	ratio := report.Target{Kind: report.RatioAtMost, Limit: loadRatioTarget}
	if ds.Options.Keys < 1_000_000 {
		// A process's start, scan and opens take milliseconds whatever the
		// size, so small loads cannot be judged against decoding alone.
		ratio.Skip = "the target is for 1M records; fixed costs dominate smaller loads"
	}
	common := fmt.Sprintf("%.0f MB of files in the page cache; ACTIVE is when storaged's status says the version became active; decode-only reads the files %d at a time in one process",
		proc.MB(ds.Bytes), runtime.NumCPU())
	b.rep.Rows = append(b.rep.Rows,
		report.NewRow(metric, "s", stats.Median(loads), "decode-only", stats.Median(decodes),
			fmt.Sprintf("%d rounds, spread %.0f%% / %.0f%%; %s", len(loads), 100*stats.Spread(loads), 100*stats.Spread(decodes), common),
			ratio, abs),
		report.NewRow(refreshMetric, "s", stats.Median(refreshes), "decode-only", stats.Median(decodes),
			fmt.Sprintf("SIGHUP to ACTIVE, the version renamed into the source root first; %d rounds, spread %.0f%%; %s",
				len(refreshes), 100*stats.Spread(refreshes), common),
			ratio),
		report.NewRow(fmt.Sprintf("storaged peak RSS while loading %s keys (%s)", keys, kind), "MB",
			stats.Median(peaks), "", 0, "VmHWM of the process started on the dataset, median over rounds",
			report.Target{Kind: report.ValueBelow, Limit: rssTargetMB}))
}

// warm reads ds's files through, so that the step timed next finds them
// in the page cache, as every load row says: storaged drops a source file
// from the cache once it has read it (shared/source), which left each
// step that came after a storaged step reading the files from the disk.
func warm(ds *dataset.Dataset) error {
	buf := make([]byte, 1<<20)
	for _, path := range ds.Files {
		f, err := os.Open(path)
		if err != nil {
			return fmt.Errorf("suite: %w", err)
		}
		_, err = io.CopyBuffer(io.Discard, struct{ io.Reader }{f}, buf)
		f.Close()
		if err != nil {
			return fmt.Errorf("suite: %w", err)
		}
	}
	return nil
}

// decodeOnce times dataset.Decode over ds's files.
func (b *bench) decodeOnce(ctx context.Context, ds *dataset.Dataset) (time.Duration, error) {
	if err := warm(ds); err != nil {
		return 0, err
	}
	t0 := time.Now()
	n, err := dataset.Decode(ctx, ds.Files, runtime.NumCPU())
	d := time.Since(t0)
	if err != nil {
		return 0, err
	}
	if n != int64(ds.Options.Keys) {
		return 0, fmt.Errorf("suite: decoded %d records, want %d", n, ds.Options.Keys)
	}
	return d, nil
}

// loadOnce starts storaged on an empty local store, times it to ACTIVE,
// reads its peak memory and stops it.
func (b *bench) loadOnce(ctx context.Context, ds *dataset.Dataset) (time.Duration, proc.Memory, error) {
	if err := warm(ds); err != nil {
		return 0, proc.Memory{}, err
	}
	store := b.storeDir()
	defer os.RemoveAll(store)
	p, took, err := b.startStoraged(ctx, "storaged-load", ds.Root, store)
	if err != nil {
		return 0, proc.Memory{}, err
	}
	defer p.Stop()
	mem, err := p.Memory()
	return took, mem, err
}

// count prints a key count briefly: 1M, 200k.
func count(n int) string {
	switch {
	case n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}

// refreshOnce starts storaged on a source root without ds's version, moves
// the version in (a rename: its files stay in the page cache), signals a
// re-scan and times it from the signal to ACTIVE.
func (b *bench) refreshOnce(ctx context.Context, ds *dataset.Dataset) (time.Duration, error) {
	root := filepath.Join(b.tmp, "refresh-root")
	if err := os.MkdirAll(filepath.Join(root, dataset.DB), 0o755); err != nil {
		return 0, fmt.Errorf("suite: %w", err)
	}
	defer os.RemoveAll(root)
	store := b.storeDir()
	defer os.RemoveAll(store)
	p, err := b.launchStoraged("storaged-refresh", root, store)
	if err != nil {
		return 0, err
	}
	defer p.Stop()
	// Up: /healthz answers (404 while nothing is active).
	if _, err := p.WaitFor(ctx, "http://"+p.Addr+"/healthz", 5*time.Millisecond, time.Minute,
		func(status int, _ []byte) (bool, error) { return status > 0, nil }); err != nil {
		return 0, err
	}
	if err := warm(ds); err != nil {
		return 0, err
	}
	from := filepath.Join(ds.Root, dataset.DB, dataset.Version)
	to := filepath.Join(root, dataset.DB, dataset.Version)
	if err := os.Rename(from, to); err != nil {
		return 0, fmt.Errorf("suite: %w", err)
	}
	defer os.Rename(to, from)
	t0 := time.Now()
	if err := p.Signal(syscall.SIGHUP); err != nil {
		return 0, err
	}
	at, err := activeAt(ctx, p)
	if err != nil {
		return 0, err
	}
	return at.Sub(t0), nil
}
