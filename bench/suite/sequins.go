package suite

import (
	"context"
	"fmt"
	"os"
	"time"

	"go.uber.org/zap"

	"spangle/bench/dataset"
	"spangle/bench/load"
	"spangle/bench/peers"
	"spangle/bench/proc"
	"spangle/bench/report"
	"spangle/bench/stats"
)

// Targets of issue 31 against sequins on the same files.
const (
	sequinsLoadRatioTarget = 0.4 // load to serving, at most
	sequinsGetRatioTarget  = 1.4 // GET throughput as a share of the trivial server's, at least
	sequinsRSSRatioTarget  = 1.0 // RSS serving, at most
	loadPeakTargetMB       = 64  // peak RSS while loading 1M keys, MB
)

// readyPoll is how often a load's known key is asked for: the
// resolution of the load-to-serving rows, and little CPU taken from the
// loads on a machine of two cores.
const readyPoll = 10 * time.Millisecond

// sequinsSection runs storaged and sequins side by side on one dataset of
// uncompressed SequenceFiles: each started on it in turn until a known
// key answers (load to serving, and VmHWM then), then both serving it
// under the same closed-loop rounds as the trivial server, and their
// memory after those rounds. Without a sequins binary it records that it
// was skipped.
func (b *bench) sequinsSection(ctx context.Context, primary *dataset.Dataset) {
	const metric = "sequins side by side"
	if b.o.Sequins == "" {
		b.rep.Rows = append(b.rep.Rows, report.Row{Metric: metric, Meets: "n/a",
			Note: "skipped: no sequins binary given (-sequins PATH or SPANGLE_BENCH_SEQUINS; scripts/build-sequins.sh builds one)"})
		return
	}
	ds := primary
	if primary.Options.Compression != 0 {
		var err error
		if ds, err = b.writeDataset(ctx, "src-sequins", b.o.Keys, false); err != nil {
			b.failed(metric, err)
			return
		}
		defer os.RemoveAll(ds.Root)
	}
	b.rep.Setup = append(b.rep.Setup, fmt.Sprintf("sequins: %s, storage.compression none (storaged's tables are uncompressed by default too), no sharding; "+
		"both read the same %d uncompressed files", b.o.Sequins, len(ds.Files)))
	if !b.sequinsLoadRows(ctx, ds) {
		return
	}
	b.sequinsServeRows(ctx, ds)
}

// server starts one of the two side by side on root with a fresh store.
type server struct {
	name  string
	start func(name, root, store string) (*proc.Process, error)
}

func (b *bench) sideBySide() []server {
	return []server{
		{"storaged", func(name, root, store string) (*proc.Process, error) { return b.launchStoraged(name, root, store) }},
		{"sequins", b.launchSequins},
	}
}

// launchSequins starts sequins on a source root with a local store, on a
// free loopback port, and returns at once.
func (b *bench) launchSequins(name, root, store string) (*proc.Process, error) {
	addr, err := proc.FreeAddr()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(store, 0o755); err != nil {
		return nil, fmt.Errorf("suite: %w", err)
	}
	conf := store + ".conf"
	if err := peers.WriteSequinsConfig(conf, peers.SequinsConfig{Source: root, Bind: addr, LocalStore: store,
		Storage: peers.SequinsStorage{Compression: "none"}}); err != nil {
		return nil, err
	}
	return proc.Start(name, addr, b.logs, b.o.Sequins, "--config", conf)
}

// untilKey waits until p answers key 0 of the dataset with 200 and
// returns the time from p's start: load to serving, taken alike for
// storaged and sequins (sequins' status gives its activation time only
// to the second).
func untilKey(ctx context.Context, p *proc.Process) (time.Duration, error) {
	url := "http://" + p.Addr + "/" + dataset.DB + "/" + string(dataset.AppendKey(nil, 0))
	return p.WaitFor(ctx, url, readyPoll, 15*time.Minute, status200)
}

// loadUntilKey starts srv on ds with an empty store, times it until the
// key answers, reads its memory then and stops it.
func (b *bench) loadUntilKey(ctx context.Context, srv server, ds *dataset.Dataset) (time.Duration, proc.Memory, error) {
	store := b.storeDir()
	defer os.RemoveAll(store)
	defer os.Remove(store + ".conf")
	p, err := srv.start(srv.name+"-load", ds.Root, store)
	if err != nil {
		return 0, proc.Memory{}, err
	}
	defer p.Stop()
	took, err := untilKey(ctx, p)
	if err != nil {
		return 0, proc.Memory{}, fmt.Errorf("%w; log: %s", err, p.LogTail(3))
	}
	mem, err := p.Memory()
	return took, mem, err
}

// sequinsLoadRows measures the loads in paired rounds, the order
// alternated, and adds the load and peak rows. It reports whether both
// loaded.
func (b *bench) sequinsLoadRows(ctx context.Context, ds *dataset.Dataset) bool {
	keys := count(ds.Options.Keys)
	metric := fmt.Sprintf("load %s keys (8 uncompressed files) beside sequins: start to a known key answering", keys)
	srvs := b.sideBySide()
	var loads, peaks [2][]float64
	var ratios []float64
	for r := 0; r < b.o.Rounds && ctx.Err() == nil; r++ {
		var took [2]time.Duration
		for j := range srvs {
			i := (j + r) % len(srvs)
			d, mem, err := b.loadUntilKey(ctx, srvs[i], ds)
			if err != nil {
				b.failed(metric, fmt.Errorf("%s: %w", srvs[i].name, err))
				return false
			}
			took[i] = d
			loads[i] = append(loads[i], d.Seconds())
			peaks[i] = append(peaks[i], proc.MB(mem.Peak))
		}
		ratios = append(ratios, took[0].Seconds()/took[1].Seconds())
		b.log.Info("sequins load round", zap.Int("round", r), zap.Duration("storaged", took[0]), zap.Duration("sequins", took[1]),
			zap.Float64("storaged_peak_mb", peaks[0][r]), zap.Float64("sequins_peak_mb", peaks[1][r]), zap.String("load", LoadAvg()))
	}
	if len(ratios) == 0 {
		return false
	}
	peakTarget := report.Target{Kind: report.ValueBelow, Limit: loadPeakTargetMB}
	if ds.Options.Keys != 1_000_000 {
		peakTarget.Skip = "the 64 MB target is for 1M keys"
	}
	b.rep.Rows = append(b.rep.Rows,
		report.NewRow(metric, "s", stats.Median(loads[0]), "sequins", stats.Median(loads[1]),
			fmt.Sprintf("%d paired rounds, order alternated, ratio the median of the rounds' ratios; spread %.0f%% / %.0f%%; each from process start, on an empty store, until GET of key 0 answers 200 (polled every %v); %.0f MB of files in the page cache",
				len(ratios), 100*stats.Spread(loads[0]), 100*stats.Spread(loads[1]), readyPoll, proc.MB(ds.Bytes)),
			report.Target{Kind: report.RatioAtMost, Limit: sequinsLoadRatioTarget}).WithRatio(stats.Median(ratios)),
		report.NewRow(fmt.Sprintf("peak RSS while loading %s keys beside sequins", keys), "MB", stats.Median(peaks[0]), "sequins", stats.Median(peaks[1]),
			"VmHWM when the key first answered, median over the same rounds", peakTarget))
	return true
}

// sequinsServeRows starts storaged and sequins on ds and the trivial
// server, runs closed-loop rounds of the three back to back (the order
// rotated each round), and adds the throughput row (each as a share of
// the trivial server's in the same round) and the memory rows.
func (b *bench) sequinsServeRows(ctx context.Context, ds *dataset.Dataset) {
	const metric = "storaged GET beside sequins"
	var procs []*proc.Process
	defer func() {
		for _, p := range procs {
			p.Stop()
		}
	}()
	for _, srv := range b.sideBySide() {
		store := b.storeDir()
		defer os.Remove(store + ".conf")
		p, err := srv.start(srv.name+"-serve", ds.Root, store)
		if err != nil {
			b.failed(metric, err)
			return
		}
		procs = append(procs, p)
		if _, err := untilKey(ctx, p); err != nil {
			b.failed(metric, fmt.Errorf("%s: %w", srv.name, err))
			return
		}
	}
	valueSize := ds.Options.ValueSize
	if valueSize == 0 {
		valueSize = 100
	}
	triv, err := b.startPeer(ctx, "trivial-sequins", "/", "serve-trivial", "--body-size", fmt.Sprint(valueSize))
	if err != nil {
		b.failed(metric, err)
		return
	}
	defer triv.Stop()

	cs := []contender{{name: "storaged", addr: procs[0].Addr}, {name: "sequins", addr: procs[1].Addr}, {name: "trivial", addr: triv.Addr}}
	f, err := b.shareRounds(ctx, cs, randomKeys(ds.Options.Keys))
	if err != nil {
		b.failed(metric, err)
		return
	}
	b.rep.Rows = append(b.rep.Rows, report.NewRow(metric+": throughput as a share of the trivial server's", "x trivial",
		stats.Median(f.share[0]), "sequins", stats.Median(f.share[1]),
		fmt.Sprintf("closed loop, %d conns, %d rounds of storaged, sequins and the trivial server back to back, order rotated; ratio the median of the rounds' storaged/sequins; median req/s %.0f / %.0f / trivial %.0f; p50/p99 %.2f/%.2f ms vs %.2f/%.2f ms; errors %d / %d%s",
			b.o.Conns, len(f.ratio), stats.Median(f.rate[0]), stats.Median(f.rate[1]), stats.Median(f.rate[2]),
			stats.Median(f.p50[0]), stats.Median(f.p99[0]), stats.Median(f.p50[1]), stats.Median(f.p99[1]), f.errors[0], f.errors[1], f.firstErr),
		report.Target{Kind: report.RatioAtLeast, Limit: sequinsGetRatioTarget}).WithRatio(stats.Median(f.ratio)))

	var mem [2]proc.Memory
	for i, p := range procs[:2] {
		if mem[i], err = p.Memory(); err != nil {
			b.failed("RSS serving beside sequins", err)
			return
		}
	}
	keys := count(ds.Options.Keys)
	after := "after the GET rounds"
	b.rep.Rows = append(b.rep.Rows,
		report.NewRow(fmt.Sprintf("RSS serving %s keys beside sequins (VmRSS)", keys), "MB", proc.MB(mem[0].Current), "sequins", proc.MB(mem[1].Current),
			fmt.Sprintf("%s; anonymous %.0f%% of storaged's (issue 31: at most half), %.0f%% of sequins'", after,
				100*float64(mem[0].Anon)/float64(mem[0].Current), 100*float64(mem[1].Anon)/float64(mem[1].Current)),
			report.Target{Kind: report.RatioAtMost, Limit: sequinsRSSRatioTarget}),
		report.NewRow(fmt.Sprintf("anonymous RSS serving %s keys beside sequins (RssAnon)", keys), "MB", proc.MB(mem[0].Anon), "sequins", proc.MB(mem[1].Anon), after),
		report.NewRow(fmt.Sprintf("file-backed RSS serving %s keys beside sequins (RssFile)", keys), "MB", proc.MB(mem[0].File), "sequins", proc.MB(mem[1].File),
			after+"; mapped file pages, the page cache's, which the kernel reclaims under pressure"),
		report.NewRow(fmt.Sprintf("peak RSS after loading and serving %s keys beside sequins (VmHWM)", keys), "MB", proc.MB(mem[0].Peak), "sequins", proc.MB(mem[1].Peak), after))
}

// shares are what shareRounds measured: per contender (in the order
// given), one figure per round.
type shares struct {
	rate, p50, p99 [3][]float64
	share          [2][]float64 // rate over the trivial server's in the same round
	ratio          []float64    // the first's share over the second's
	errors         [2]int64
	firstErr       string
}

// shareRounds runs closed-loop rounds of cs[0], cs[1] and cs[2] (the
// trivial server) back to back, the order rotated each round, after a
// warm-up of each.
func (b *bench) shareRounds(ctx context.Context, cs []contender, path load.PathFunc) (shares, error) {
	var f shares
	run := func(c contender, d, warmup time.Duration, seed uint64) (load.Result, error) {
		return load.Run(ctx, load.Options{Addr: c.addr, Path: path, Conns: b.o.Conns, Warmup: warmup, Duration: d, Seed: seed})
	}
	warm := time.Second
	if b.o.Quick {
		warm = 500 * time.Millisecond
	}
	for _, c := range cs {
		if _, err := run(c, warm, 0, 99); err != nil {
			return f, err
		}
	}
	for r := 0; r < b.o.Rounds && ctx.Err() == nil; r++ {
		var rate [3]float64
		for j := range cs {
			i := (j + r) % len(cs)
			res, err := run(cs[i], b.o.Round, 200*time.Millisecond, uint64(r))
			if err != nil {
				return f, err
			}
			rate[i] = res.Rate()
			f.rate[i] = append(f.rate[i], res.Rate())
			f.p50[i] = append(f.p50[i], stats.Millis(stats.Percentile(res.Latencies, 0.5)))
			f.p99[i] = append(f.p99[i], stats.Millis(stats.Percentile(res.Latencies, 0.99)))
			if i < 2 {
				f.errors[i] += res.Errors
			}
			if res.Errors > 0 && f.firstErr == "" {
				f.firstErr = fmt.Sprintf(" (first: %s, %s)", cs[i].name, res.FirstError)
			}
		}
		b.log.Info("sequins GET round", zap.Int("round", r), zap.Float64("storaged", rate[0]), zap.Float64("sequins", rate[1]),
			zap.Float64("trivial", rate[2]), zap.String("load", LoadAvg()))
		if rate[2] <= 0 || rate[1] <= 0 {
			continue
		}
		f.share[0] = append(f.share[0], rate[0]/rate[2])
		f.share[1] = append(f.share[1], rate[1]/rate[2])
		f.ratio = append(f.ratio, rate[0]/rate[1])
	}
	if len(f.ratio) == 0 {
		return f, fmt.Errorf("suite: no round where sequins and the trivial server both answered%s", f.firstErr)
	}
	return f, ctx.Err()
}
