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

// Targets of issue 30 for Parquet input, against the same keys as
// uncompressed SequenceFiles.
const (
	parquetLoadRatioTarget = 2.0 // key + 100-byte binary value, Snappy: load time, at most
	featureLoadRatioTarget = 3.0 // 12-column feature table as JSON: load time, at most
	featureGetRatioTarget  = 0.9 // its GET throughput against the binary-value db's, at least
)

// parquetSection writes the dataset's keys as uncompressed SequenceFiles,
// as Parquet (a string key and a 100-byte binary value, Snappy) and as a
// 12-column Parquet feature table served as JSON; loads the three
// alternately (storaged start to ACTIVE); then compares GET throughput
// of the feature db with the SequenceFile db's.
func (b *bench) parquetSection(ctx context.Context) {
	kvMetric := fmt.Sprintf("load %s keys from Parquet (key + 100-byte value, Snappy): storaged start to ACTIVE", count(b.o.Keys))
	ftMetric := fmt.Sprintf("load %s rows of a 12-column Parquet feature table as JSON: storaged start to ACTIVE", count(b.o.Keys))
	seq, err := b.writeDataset(ctx, "src-parquet-seq", b.o.Keys, false)
	if err != nil {
		b.failed(kvMetric, err)
		return
	}
	defer os.RemoveAll(seq.Root)
	write := func(name, format string) (*dataset.Dataset, error) {
		root := filepath.Join(b.tmp, name)
		if err := os.MkdirAll(root, 0o755); err != nil {
			return nil, err
		}
		t0 := time.Now()
		ds, err := dataset.Write(ctx, root, dataset.Options{Keys: b.o.Keys, Format: format})
		if err != nil {
			os.RemoveAll(root)
			return nil, err
		}
		b.log.Info("Parquet dataset written", zap.String("dir", root), zap.String("format", format),
			zap.Int64("bytes", ds.Bytes), zap.Duration("took", time.Since(t0)))
		return ds, nil
	}
	kv, err := write("src-parquet", dataset.FormatParquet)
	if err != nil {
		b.failed(kvMetric, err)
		return
	}
	defer os.RemoveAll(kv.Root)
	ft, err := write("src-parquet-features", dataset.FormatParquetFeatures)
	if err != nil {
		b.failed(ftMetric, err)
		return
	}
	defer os.RemoveAll(ft.Root)

	took := map[*dataset.Dataset][]float64{}
	cpu := map[*dataset.Dataset][]float64{}
	peak := map[*dataset.Dataset][]float64{}
	all := []*dataset.Dataset{seq, kv, ft}
	for r := 0; r < b.o.Rounds && ctx.Err() == nil; r++ {
		for i := range all {
			ds := all[(i+r)%len(all)] // each goes first in turn
			d, c, mem, err := b.loadOnceCPU(ctx, ds)
			if err != nil {
				b.failed(kvMetric, err)
				return
			}
			took[ds] = append(took[ds], d.Seconds())
			cpu[ds] = append(cpu[ds], c)
			peak[ds] = append(peak[ds], proc.MB(mem.Peak))
		}
		b.log.Info("parquet load round", zap.Int("round", r), zap.Float64("seqfile_s", last(took[seq])),
			zap.Float64("parquet_s", last(took[kv])), zap.Float64("features_s", last(took[ft])),
			zap.Float64("seqfile_cpu_s", last(cpu[seq])), zap.Float64("parquet_cpu_s", last(cpu[kv])),
			zap.Float64("features_cpu_s", last(cpu[ft])))
	}
	if len(took[seq]) == 0 {
		return
	}
	note := func(ds *dataset.Dataset) string {
		return fmt.Sprintf("%d rounds, the three loads in turn; spread %.0f%% / %.0f%%; storaged CPU to ACTIVE %.2f s vs %.2f s (%.2fx); %.0f MB of Parquet, %.0f MB of SequenceFiles, in the page cache; peak RSS %.0f MB vs %.0f MB",
			len(took[ds]), 100*stats.Spread(took[ds]), 100*stats.Spread(took[seq]),
			stats.Median(cpu[ds]), stats.Median(cpu[seq]), stats.Median(cpu[ds])/stats.Median(cpu[seq]),
			proc.MB(ds.Bytes), proc.MB(seq.Bytes), stats.Median(peak[ds]), stats.Median(peak[seq]))
	}
	b.rep.Rows = append(b.rep.Rows,
		report.NewRow(kvMetric, "s", stats.Median(took[kv]), "uncompressed SequenceFiles", stats.Median(took[seq]), note(kv),
			report.Target{Kind: report.RatioAtMost, Limit: parquetLoadRatioTarget}),
		report.NewRow(ftMetric, "s", stats.Median(took[ft]), "uncompressed SequenceFiles", stats.Median(took[seq]), note(ft),
			report.Target{Kind: report.RatioAtMost, Limit: featureLoadRatioTarget}))

	b.getRowAgainstSequenceFiles(ctx, "storaged GET, Parquet feature table as JSON", "storaged-parquet-features",
		"storaged on the Parquet feature table", ft.Root, "binary-value (SequenceFile) db", seq.Root, featureGetRatioTarget)
}

// loadOnceCPU is loadOnce that also reads storaged's CPU seconds (user
// and system) at ACTIVE: on a machine shared with other work, wall time
// is mostly the others', CPU time is the load's own.
func (b *bench) loadOnceCPU(ctx context.Context, ds *dataset.Dataset) (time.Duration, float64, proc.Memory, error) {
	store := b.storeDir()
	defer os.RemoveAll(store)
	p, took, err := b.startStoraged(ctx, "storaged-load", ds.Root, store)
	if err != nil {
		return 0, 0, proc.Memory{}, err
	}
	defer p.Stop()
	cpu, err := p.CPUSeconds()
	if err != nil {
		return 0, 0, proc.Memory{}, err
	}
	mem, err := p.Memory()
	return took, cpu, mem, err
}

// parquetBigRSSTargetMB is issue 30's bound on storaged's peak RSS while
// it loads a 1 GB Parquet file.
const parquetBigRSSTargetMB = 200

// parquetBigRows writes one Parquet file of about mb MB (2 KiB values of
// words, which Snappy shrinks about fourfold, in row groups of 128 Ki
// rows, 256 MiB uncompressed each) and loads it twice, to ACTIVE, taking
// storaged's peak RSS: as one partition in key order (the fast path),
// and with a _FORMAT of 8 partitions, so that its rows are spread,
// buffered, spilled and merged (the general path).
func (b *bench) parquetBigRows(ctx context.Context, mb int) {
	metric := func(how string) string {
		return fmt.Sprintf("storaged peak RSS loading one %d MB Parquet file, %s", mb, how)
	}
	const valueSize = 2 << 10
	root := filepath.Join(b.tmp, "src-parquet-big")
	if err := os.MkdirAll(root, 0o755); err != nil {
		b.failed(metric("in key order"), err)
		return
	}
	defer os.RemoveAll(root)
	t0 := time.Now()
	ds, err := dataset.Write(ctx, root, dataset.Options{Keys: mb * 2000, Files: 1, ValueSize: valueSize, Format: dataset.FormatParquet})
	if err != nil {
		b.failed(metric("in key order"), err)
		return
	}
	b.log.Info("big Parquet file written", zap.Int64("bytes", ds.Bytes), zap.Duration("took", time.Since(t0)))
	for _, c := range []struct{ how, marker string }{
		{"in key order (one partition: no buffer)", ""},
		{"spread over 8 partitions (buffered, spilled, merged)", "key_column = \"key\"\nvalue_column = \"value\"\npartitions = 8\n"},
	} {
		marker := filepath.Join(ds.Root, dataset.DB, "_FORMAT")
		if c.marker != "" {
			if err := os.WriteFile(marker, []byte(c.marker), 0o644); err != nil {
				b.failed(metric(c.how), err)
				return
			}
		}
		d, mem, err := b.loadOnce(ctx, ds)
		if err != nil {
			b.failed(metric(c.how), err)
			return
		}
		b.rep.Rows = append(b.rep.Rows, report.NewRow(metric(c.how), "MB", proc.MB(mem.Peak), "", 0,
			fmt.Sprintf("VmHWM to ACTIVE; %.0f MB file, %d rows of %d-byte values; load took %.1f s", proc.MB(ds.Bytes), mb*2000, valueSize, d.Seconds()),
			report.Target{Kind: report.ValueBelow, Limit: parquetBigRSSTargetMB}))
	}
}

func last(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return xs[len(xs)-1]
}
