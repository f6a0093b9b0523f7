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
// and as Sparkey pairs, loads each alternately (storaged start to ACTIVE,
// and its peak memory), then compares GET throughput of a storaged on each.
func (b *bench) sparkeySection(ctx context.Context) {
	metric := fmt.Sprintf("load %s keys from Sparkey (Snappy blocks): storaged start to ACTIVE", count(b.o.Keys))
	seq, err := b.writeDataset(ctx, "src-sparkey-seq", b.o.Keys, false)
	if err != nil {
		b.failed(metric, err)
		return
	}
	defer os.RemoveAll(seq.Root)
	root := filepath.Join(b.tmp, "src-sparkey")
	if err := os.MkdirAll(root, 0o755); err != nil {
		b.failed(metric, err)
		return
	}
	defer os.RemoveAll(root)
	t0 := time.Now()
	spk, err := dataset.Write(ctx, root, dataset.Options{Keys: b.o.Keys, Format: dataset.FormatSparkey})
	if err != nil {
		b.failed(metric, err)
		return
	}
	b.log.Info("Sparkey dataset written", zap.String("dir", root), zap.Int64("bytes", spk.Bytes), zap.Duration("took", time.Since(t0)))

	var sl, ql, sp, qp []float64
	for r := 0; r < b.o.Rounds && ctx.Err() == nil; r++ {
		order := []*dataset.Dataset{spk, seq}
		if r%2 == 1 {
			order = []*dataset.Dataset{seq, spk}
		}
		for _, ds := range order {
			took, mem, err := b.loadOnce(ctx, ds)
			if err != nil {
				b.failed(metric, err)
				return
			}
			if ds == spk {
				sl, sp = append(sl, took.Seconds()), append(sp, proc.MB(mem.Peak))
			} else {
				ql, qp = append(ql, took.Seconds()), append(qp, proc.MB(mem.Peak))
			}
		}
		b.log.Info("sparkey load round", zap.Int("round", r), zap.Float64("sparkey_s", sl[len(sl)-1]), zap.Float64("seqfile_s", ql[len(ql)-1]))
	}
	if len(sl) == 0 {
		return
	}
	note := fmt.Sprintf("%d rounds alternated, spread %.0f%% / %.0f%%; %.0f MB of Sparkey files, %.0f MB of SequenceFiles, in the page cache",
		len(sl), 100*stats.Spread(sl), 100*stats.Spread(ql), proc.MB(spk.Bytes), proc.MB(seq.Bytes))
	b.rep.Rows = append(b.rep.Rows,
		report.NewRow(metric, "s", stats.Median(sl), "uncompressed SequenceFiles", stats.Median(ql), note,
			report.Target{Kind: report.RatioAtMost, Limit: sparkeyLoadRatioTarget}),
		report.NewRow(fmt.Sprintf("storaged peak RSS while loading %s keys from Sparkey", count(b.o.Keys)), "MB",
			stats.Median(sp), "uncompressed SequenceFiles", stats.Median(qp), "VmHWM of the process started on each, median over rounds",
			report.Target{Kind: report.RatioAtMost, Limit: sparkeyRSSRatioTarget}))

	b.getRowAgainstSequenceFiles(ctx, "storaged GET, Sparkey-loaded db", "storaged-sparkey", "storaged on Sparkey", spk.Root,
		"SequenceFile-loaded db", seq.Root, sparkeyGetRatioTarget)
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
