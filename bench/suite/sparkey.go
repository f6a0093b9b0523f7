package suite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"spangle/bench/dataset"
	"spangle/bench/proc"
	"spangle/bench/report"
	"spangle/bench/stats"
)

// Targets of issue 28 for Sparkey input, against the same keys as
// uncompressed SequenceFiles.
const (
	sparkeyLoadRatioTarget = 0.5  // load time, at most
	sparkeyGetRatioTarget  = 0.95 // GET throughput, at least
	sparkeyRSSRatioTarget  = 1.0  // peak RSS while loading, at most
)

// sparkeySection writes the dataset's keys as uncompressed SequenceFiles
// and as Sparkey pairs twice, logs in Snappy blocks (streamed into
// tables) and uncompressed (served in place), loads each in turn
// (storaged start to ACTIVE, and its peak memory), then compares GET
// throughput of a storaged on each Sparkey db with one on the
// SequenceFiles.
func (b *bench) sparkeySection(ctx context.Context) {
	metric := fmt.Sprintf("load %s keys from Sparkey: storaged start to ACTIVE", count(b.o.Keys))
	seq, err := b.writeDataset(ctx, "src-sparkey-seq", b.o.Keys, false)
	if err != nil {
		b.failed(metric, err)
		return
	}
	defer os.RemoveAll(seq.Root)
	kinds := []struct {
		name  string
		plain bool
		ds    *dataset.Dataset
		l, p  []float64
	}{{name: "Snappy blocks, streamed into tables"}, {name: "uncompressed, served in place", plain: true}}
	for i := range kinds {
		k := &kinds[i]
		root := filepath.Join(b.tmp, fmt.Sprintf("src-sparkey-%d", i))
		if err := os.MkdirAll(root, 0o755); err != nil {
			b.failed(metric, err)
			return
		}
		defer os.RemoveAll(root)
		t0 := time.Now()
		k.ds, err = dataset.Write(ctx, root, dataset.Options{Keys: b.o.Keys, Format: dataset.FormatSparkey, SparkeyPlain: k.plain})
		if err != nil {
			b.failed(metric, err)
			return
		}
		b.log.Info("Sparkey dataset written", zap.String("dir", root), zap.Bool("uncompressed", k.plain),
			zap.Int64("bytes", k.ds.Bytes), zap.Duration("took", time.Since(t0)))
	}

	var ql, qp []float64
	for r := 0; r < b.o.Rounds && ctx.Err() == nil; r++ {
		// Each round in another order: 0 1 2, 2 1 0, ...
		order := []int{0, 1, 2}
		if r%2 == 1 {
			order = []int{2, 1, 0}
		}
		for _, i := range order {
			ds := seq
			if i < len(kinds) {
				ds = kinds[i].ds
			}
			took, mem, err := b.loadOnce(ctx, ds)
			if err != nil {
				b.failed(metric, err)
				return
			}
			if i < len(kinds) {
				kinds[i].l, kinds[i].p = append(kinds[i].l, took.Seconds()), append(kinds[i].p, proc.MB(mem.Peak))
			} else {
				ql, qp = append(ql, took.Seconds()), append(qp, proc.MB(mem.Peak))
			}
		}
		b.log.Info("sparkey load round", zap.Int("round", r), zap.Float64("sparkey_snappy_s", kinds[0].l[len(kinds[0].l)-1]),
			zap.Float64("sparkey_plain_s", kinds[1].l[len(kinds[1].l)-1]), zap.Float64("seqfile_s", ql[len(ql)-1]))
	}
	if len(ql) == 0 {
		return
	}
	for _, k := range kinds {
		note := fmt.Sprintf("%d rounds, order alternated, spread %.0f%% / %.0f%%; %.0f MB of Sparkey files, %.0f MB of SequenceFiles, in the page cache",
			len(k.l), 100*stats.Spread(k.l), 100*stats.Spread(ql), proc.MB(k.ds.Bytes), proc.MB(seq.Bytes))
		b.rep.Rows = append(b.rep.Rows,
			report.NewRow(fmt.Sprintf("load %s keys from Sparkey (%s): storaged start to ACTIVE", count(b.o.Keys), k.name), "s",
				stats.Median(k.l), "uncompressed SequenceFiles", stats.Median(ql), note,
				report.Target{Kind: report.RatioAtMost, Limit: sparkeyLoadRatioTarget}),
			report.NewRow(fmt.Sprintf("storaged peak RSS while loading %s keys from Sparkey (%s)", count(b.o.Keys), k.name), "MB",
				stats.Median(k.p), "uncompressed SequenceFiles", stats.Median(qp), "VmHWM of the process started on each, median over rounds",
				report.Target{Kind: report.RatioAtMost, Limit: sparkeyRSSRatioTarget}))
	}
	for i, k := range kinds {
		b.getRowAgainstSequenceFiles(ctx, fmt.Sprintf("storaged GET, Sparkey db (%s)", k.name), fmt.Sprintf("storaged-sparkey-%d", i),
			"storaged on Sparkey", k.ds.Root, "SequenceFile-loaded db", seq.Root, sparkeyGetRatioTarget)
	}
}

// getRowAgainstSequenceFiles adds the row of metric: GET throughput of a
// storaged serving root (process proc, contender name) against one
// serving the SequenceFile dataset seqRoot (peer), side by side.
func (b *bench) getRowAgainstSequenceFiles(ctx context.Context, metric, proc, name, root, peer, seqRoot string, target float64) {
	st, _, err := b.startStoraged(ctx, proc, root, b.storeDir())
	if err != nil {
		b.failed(metric, err)
		return
	}
	defer st.Stop()
	qst, _, err := b.startStoraged(ctx, "storaged-seqfile", seqRoot, b.storeDir())
	if err != nil {
		b.failed(metric, err)
		return
	}
	defer qst.Stop()
	fa, fp, err := b.compare(ctx, contender{name: name, addr: st.Addr}, contender{name: "storaged on SequenceFiles", addr: qst.Addr}, randomKeys(b.o.Keys))
	if err != nil {
		b.failed(metric, err)
		return
	}
	row := report.NewRow(metric+" throughput", "req/s", fa.rate, peer, fp.rate,
		fmt.Sprintf("closed loop, %d conns; ratio is the median of the rounds' ratios; p50/p99 %.2f/%.2f ms vs %.2f/%.2f ms; spread %.0f%% / %.0f%%%s%s",
			b.o.Conns, fa.p50, fa.p99, fp.p50, fp.p99, 100*fa.spread, 100*fp.spread, fa.errNote(), fp.errNote()),
		report.Target{Kind: report.RatioAtLeast, Limit: target})
	if fa.ratio > 0 {
		row = row.WithRatio(fa.ratio)
	}
	b.rep.Rows = append(b.rep.Rows, row)
}
