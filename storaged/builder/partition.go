package builder

import (
	"context"
	"fmt"
	"os"
	"time"

	"go.uber.org/zap"

	"spangle/shared/dbver"
	"spangle/shared/source"
	"spangle/storaged/loader"
	"spangle/storaged/repair"
	"spangle/storaged/store"
	"spangle/storaged/table"
)

// Fill writes partition p into dir, emptied first: a copy
// by fill (from a peer), checked block by block, since the peer's disk
// may have rotted too; else, when fill is nil or fails, a build from the
// source, synced. It returns where the partition came from,
// repair.FromPeer or repair.FromSource.
func (b *Builder) Fill(ctx context.Context, p dbver.Partition, files []source.File, dir string, fill func(ctx context.Context, dir string) error) (string, error) {
	if err := os.RemoveAll(dir); err != nil {
		return "", fmt.Errorf("versions: %w", err)
	}
	if fill != nil {
		err := fill(ctx, dir)
		if err == nil {
			if err = table.VerifyPartition(ctx, dir, nil); err == nil {
				b.partitions.WithLabelValues(repair.FromPeer).Inc()
				return repair.FromPeer, nil
			}
		}
		b.log.Info("no good copy of the partition from a peer; building it from the source", zap.String("db", p.DB),
			zap.String("version", p.Version), zap.Int("partition", p.P), zap.Error(err))
		if err := os.RemoveAll(dir); err != nil {
			return "", fmt.Errorf("versions: %w", err)
		}
	}
	res, err := loader.Load(ctx, loader.Request{
		Source: b.opts.Source, DB: p.DB, Version: p.Version, Files: files, Held: []int{p.P},
		Dir: func(int) string { return dir },
	}, b.LoaderOptions(p.DB))
	if err == nil {
		// The manifest will list it: on disk first.
		err = res.Sync()
	}
	if err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("versions: building partition %s: %w", p, err)
	}
	b.records.Add(float64(res.Records))
	b.partitions.WithLabelValues(repair.FromSource).Inc()
	return repair.FromSource, nil
}

// BuildBeside builds db/name (n partitions) from files into the store's
// rebuild directory, syncs it, marks its manifest complete (loaded then)
// and opens it there.
func (b *Builder) BuildBeside(ctx context.Context, db, name string, files []source.File, n int, held []int, loaded time.Time) (Opened, error) {
	st := b.opts.Store
	if err := st.RemoveRebuild(dbver.Of(db, name)); err != nil {
		return Opened{}, LocalErr(err)
	}
	created := newest(files)
	dir := func(p int) string { return st.RebuildPartitionDir(dbver.Of(db, name).Partition(p)) }
	lopts := b.LoaderOptions(db)
	layout, err := loader.Detect(files, lopts.Formats)
	if err != nil {
		return Opened{}, err
	}
	res, err := loader.Load(ctx, loader.Request{
		Source: b.opts.Source, DB: db, Version: name, Files: files, Held: held, Dir: dir,
	}, lopts)
	if err != nil {
		return Opened{}, err
	}
	b.records.Add(float64(res.Records))
	b.partitions.WithLabelValues(repair.FromSource).Add(float64(len(held)))
	if err := res.Sync(); err != nil {
		return Opened{}, LocalErr(err)
	}
	man := store.Manifest{DB: db, Version: name, NumPartitions: n, Partitions: held, Files: files,
		Created: created, Loaded: loaded, Complete: true, ContentType: layout.ContentType}
	if err := st.WriteRebuildManifest(man); err != nil {
		return Opened{}, LocalErr(err)
	}
	parts, err := b.openWith(func(p int) (*table.Partition, error) { return res.OpenPartition(p, dir(p), b.opts.Cache) }, n, held)
	if err != nil {
		return Opened{}, LocalErr(err)
	}
	return Opened{Parts: parts, N: n, Created: created, ContentType: layout.ContentType}, nil
}
