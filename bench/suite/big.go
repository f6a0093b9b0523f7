package suite

import (
	"context"
	"fmt"
	"os"
	"time"

	"go.uber.org/zap"

	"spangle/bench/load"
	"spangle/bench/proc"
	"spangle/bench/report"
	"spangle/bench/stats"
)

// bigSection loads a BigKeys dataset twice, serves random keys of it for
// a while, and reports storaged's memory: the serving memory target is for
// a 10M-key version. The first load is reported in the note only: on a
// virtual machine whose memory the host backs on first touch, it pays for
// every page of the page cache it fills, which the second (after the
// first's store is deleted) reuses as any long-running machine would.
func (b *bench) bigSection(ctx context.Context) {
	n := b.o.BigKeys
	metric := fmt.Sprintf("storaged anonymous memory serving %s keys", count(n))
	ds, err := b.writeDataset(ctx, "src-big", n, !b.o.Uncompressed)
	if err != nil {
		b.failed(metric, err)
		return
	}
	defer os.RemoveAll(ds.Root)
	d, err := b.decodeOnce(ctx, ds)
	if err != nil {
		b.failed(metric, err)
		return
	}
	coldStore := b.storeDir()
	cold, coldTook, err := b.startStoraged(ctx, "storaged-big-first", ds.Root, coldStore)
	if err != nil {
		os.RemoveAll(coldStore)
		b.failed(metric, err)
		return
	}
	cold.Stop()
	os.RemoveAll(coldStore)
	// The first load dropped the files from the page cache, where
	// decode-only found them.
	if err := warm(ds); err != nil {
		b.failed(metric, err)
		return
	}
	store := b.storeDir()
	defer os.RemoveAll(store)
	st, took, err := b.startStoraged(ctx, "storaged-big", ds.Root, store)
	if err != nil {
		b.failed(metric, err)
		return
	}
	defer st.Stop()
	loaded, err := st.Memory()
	if err != nil {
		b.failed(metric, err)
		return
	}
	var rates []float64
	var errs int64
	for r := 0; r < 2; r++ {
		res, err := load.Run(ctx, load.Options{Addr: st.Addr, Path: randomKeys(n), Conns: b.o.Conns,
			Warmup: 200 * time.Millisecond, Duration: 2 * b.o.Round, Seed: uint64(r)})
		if err != nil {
			b.failed(metric, err)
			return
		}
		rates = append(rates, res.Rate())
		errs += res.Errors
		b.log.Info("big round", zap.Int("round", r), zap.Float64("req/s", res.Rate()), zap.Int64("errors", res.Errors))
	}
	mem, err := st.Memory()
	if err != nil {
		b.failed(metric, err)
		return
	}
	kind := "uncompressed"
	if ds.Options.Compression != 0 {
		kind = "block " + codecName(ds.Options.Codec)
	}
	b.rep.Rows = append(b.rep.Rows,
		report.NewRow(fmt.Sprintf("load %s keys (%s): storaged start to ACTIVE", count(n), kind), "s", took.Seconds(),
			"decode-only", d.Seconds(), fmt.Sprintf("the second load; %.0f MB of files; the first took %.2f s", proc.MB(ds.Bytes), coldTook.Seconds()),
			report.Target{Kind: report.RatioAtMost, Limit: loadRatioTarget}),
		report.NewRow(metric, "MB", proc.MB(mem.Anon), "", 0,
			fmt.Sprintf("RssAnon (the process's own memory) after %d closed-loop rounds of random keys (median %.0f req/s, %d errors); VmRSS %.0f MB, the rest the mapped tables' file pages, which are the page cache's; %.0f MB RSS right after loading",
				len(rates), stats.Median(rates), errs, proc.MB(mem.Current), proc.MB(loaded.Current)),
			report.Target{Kind: report.ValueBelow, Limit: rssTargetMB}),
		report.NewRow(fmt.Sprintf("storaged peak RSS while loading %s keys", count(n)), "MB", proc.MB(loaded.Peak), "", 0,
			fmt.Sprintf("VmHWM when the version became ACTIVE; %.0f MB after serving, mapped file pages included", proc.MB(mem.Peak)),
			report.Target{Kind: report.ValueBelow, Limit: rssTargetMB}),
	)
}
