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
	"spangle/shared/s3test"
)

// s3LoadRatioTarget is issue 18's target: loading from S3 on loopback
// takes at most 1.3x the same load from a local directory.
const s3LoadRatioTarget = 1.3

// s3Bucket is the bucket the S3 server serves the dataset from.
const s3Bucket = "spanglebench"

// s3Section measures storaged loading ds from an S3 server (versitygw on
// loopback, serving hard links to ds's files, so both read the same page
// cache) against the same load from the local directory, alternating
// rounds: process start to ACTIVE each, and the S3 load's peak memory.
func (b *bench) s3Section(ctx context.Context, ds *dataset.Dataset) {
	keys := count(ds.Options.Keys)
	metric := fmt.Sprintf("load %s keys from S3 (versitygw on loopback): storaged start to ACTIVE", keys)
	srv, err := b.startS3(ctx, ds)
	if err != nil {
		b.failed(metric, err)
		return
	}
	defer srv.Stop()
	env := []string{"env",
		"AWS_ACCESS_KEY_ID=" + s3test.AccessKey, "AWS_SECRET_ACCESS_KEY=" + s3test.SecretKey,
		"AWS_REGION=" + s3test.Region, "AWS_ENDPOINT_URL_S3=http://" + srv.Addr,
		"AWS_CONFIG_FILE=" + os.DevNull, "AWS_SHARED_CREDENTIALS_FILE=" + os.DevNull, "AWS_EC2_METADATA_DISABLED=true"}
	var s3s, locals, peaks []float64
	for r := 0; r < b.o.Rounds && ctx.Err() == nil; r++ {
		var s3d, locald time.Duration
		var mem proc.Memory
		steps := []func() error{
			func() (err error) { s3d, mem, err = b.loadS3Once(ctx, env); return err },
			func() (err error) { locald, _, err = b.loadOnce(ctx, ds); return err },
		}
		for i := range steps {
			if err = steps[(i+r)%len(steps)](); err != nil {
				break
			}
		}
		if err != nil {
			b.failed(metric, err)
			return
		}
		b.log.Info("s3 load round", zap.Int("round", r), zap.Duration("s3", s3d), zap.Duration("local", locald),
			zap.Float64("peak_mb", proc.MB(mem.Peak)))
		s3s = append(s3s, s3d.Seconds())
		locals = append(locals, locald.Seconds())
		peaks = append(peaks, proc.MB(mem.Peak))
	}
	if len(s3s) == 0 {
		return
	}
	b.rep.Rows = append(b.rep.Rows,
		report.NewRow(metric, "s", stats.Median(s3s), "local directory", stats.Median(locals),
			fmt.Sprintf("%d alternated rounds, spread %.0f%% / %.0f%%; versitygw's posix backend serves hard links to the same %.0f MB of files in the page cache",
				len(s3s), 100*stats.Spread(s3s), 100*stats.Spread(locals), proc.MB(ds.Bytes)),
			report.Target{Kind: report.RatioAtMost, Limit: s3LoadRatioTarget}),
		report.NewRow(fmt.Sprintf("storaged peak RSS while loading %s keys from S3", keys), "MB",
			stats.Median(peaks), "", 0, "VmHWM of the process started on the S3 root, median over rounds",
			report.Target{Kind: report.ValueBelow, Limit: rssTargetMB}))
}

// startS3 links ds's version into a bucket directory and starts
// versitygw on it, on loopback.
func (b *bench) startS3(ctx context.Context, ds *dataset.Dataset) (*proc.Process, error) {
	bin, err := s3test.Binary()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(b.tmp, "s3")
	vdir := filepath.Join(dir, s3Bucket, dataset.DB, dataset.Version)
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return nil, fmt.Errorf("suite: %w", err)
	}
	for _, f := range ds.Files {
		if err := os.Link(f, filepath.Join(vdir, filepath.Base(f))); err != nil {
			return nil, fmt.Errorf("suite: linking the dataset into the bucket: %w", err)
		}
	}
	addr, err := proc.FreeAddr()
	if err != nil {
		return nil, err
	}
	p, err := proc.Start("versitygw", addr, b.logs, bin, "--port", addr, "--access", s3test.AccessKey,
		"--secret", s3test.SecretKey, "--region", s3test.Region, "--quiet", "posix", dir)
	if err != nil {
		return nil, err
	}
	if _, err := p.WaitFor(ctx, "http://"+addr+"/", 10*time.Millisecond, time.Minute,
		func(status int, _ []byte) (bool, error) { return status > 0, nil }); err != nil {
		p.Stop()
		return nil, fmt.Errorf("suite: versitygw did not start: %w", err)
	}
	return p, nil
}

// loadS3Once starts storaged on the S3 root with an empty local store,
// times it to ACTIVE, reads its peak memory and stops it.
func (b *bench) loadS3Once(ctx context.Context, env []string) (time.Duration, proc.Memory, error) {
	store := b.storeDir()
	defer os.RemoveAll(store)
	addr, err := proc.FreeAddr()
	if err != nil {
		return 0, proc.Memory{}, err
	}
	argv := append(append([]string{}, env...), b.o.Storaged, "--source", "s3://"+s3Bucket, "--local-store", store,
		"--bind", addr, "--log-level", "warn")
	p, err := proc.Start("storaged-s3", addr, b.logs, append(argv, b.o.StoragedArgs...)...)
	if err != nil {
		return 0, proc.Memory{}, err
	}
	defer p.Stop()
	at, err := activeAt(ctx, p)
	if err != nil {
		return 0, proc.Memory{}, err
	}
	mem, err := p.Memory()
	return at.Sub(p.Started), mem, err
}
