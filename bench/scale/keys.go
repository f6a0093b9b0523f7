package scale

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"spangle/bench/dataset"
	"spangle/bench/load"
	"spangle/bench/proc"
	"spangle/bench/stats"
)

// KeysPoint is one size of the keys dimension: one storaged holding one
// uncompressed version of Keys keys with 100-byte values.
type KeysPoint struct {
	Keys  int `json:"keys"`
	Files int `json:"files"`
	// DataMB is the SequenceFiles' size.
	DataMB float64 `json:"data_mb"`
	// LoadS is the median of LoadRunsS, each a storaged's start to
	// ACTIVE by its own clock, into an empty store; DecodeS is decoding
	// every record of the files, as many at once as CPUs.
	LoadS     float64   `json:"load_s"`
	LoadRunsS []float64 `json:"load_runs_s,omitempty"`
	DecodeS   float64   `json:"decode_s"`
	// LoadPeakMB is VmHWM at the last load's ACTIVE; ServingMB is VmRSS
	// after the GET rounds, ServingPeakMB VmHWM then.
	LoadPeakMB    float64 `json:"load_peak_mb"`
	ServingMB     float64 `json:"serving_mb"`
	ServingPeakMB float64 `json:"serving_peak_mb"`
	// StoreMB is the local store's size on disk (allocated blocks).
	StoreMB float64 `json:"store_mb"`
	// ReqPerS is the median closed-loop throughput of random GETs over
	// all keys; P50Ms and P99Ms are at half of it, open loop.
	ReqPerS  float64 `json:"req_per_s"`
	HalfRate float64 `json:"half_rate"`
	P50Ms    float64 `json:"p50_ms"`
	P99Ms    float64 `json:"p99_ms"`
	// Errors are failed GETs in all rounds; every key exists, so any is
	// a fault.
	Errors int64 `json:"errors"`
}

// fileBytes is about what one data file should hold: a Hadoop job's
// reducer output of the kind sequins served, and what makes 100M keys
// 64 files as the issue asks.
const fileBytes = 256 << 20

// recordBytes is about one record's size in an uncompressed file: a
// 14-byte key and a 100-byte value with their lengths and sync marks.
const recordBytes = 130

// filesFor picks the file count for n keys: about fileBytes a file, a
// power of two, at least 8 (make bench's count, so 1M compares with it).
// Fewer files for fewer keys keep each file the size a job writes rather
// than splitting small data finely: 1M and 10M keys are 8 files, 100M
// 64.
func filesFor(n int) int {
	f := 8
	for int64(n)*recordBytes > int64(f)*fileBytes {
		f *= 2
	}
	return f
}

// keysPoint writes n keys, measures decode-only, loads them in storaged,
// serves random keys, and removes the dataset and store.
func (r *run) keysPoint(ctx context.Context, n int) (KeysPoint, error) {
	p := KeysPoint{Keys: n, Files: r.o.Files}
	if p.Files <= 0 {
		p.Files = filesFor(n)
	}
	root, err := r.dir("keys-src")
	if err != nil {
		return p, err
	}
	defer os.RemoveAll(root)
	t0 := time.Now()
	ds, err := dataset.Write(ctx, root, dataset.Options{Keys: n, Files: p.Files})
	if err != nil {
		return p, fmt.Errorf("scale: writing %d keys: %w", n, err)
	}
	p.DataMB = proc.MB(ds.Bytes)
	r.log.Info("dataset written", zap.Int("keys", n), zap.Int("files", p.Files), zap.Float64("mb", p.DataMB), zap.Duration("took", time.Since(t0)))

	// Every size reads its source from the disk, as a node reads a remote
	// one: the files just written would otherwise be in the page cache
	// at 1M and 10M keys and mostly not at 100M.
	if err := evictFromPageCache(ds.Files); err != nil {
		return p, err
	}
	t0 = time.Now()
	got, err := dataset.Decode(ctx, ds.Files, runtime.NumCPU())
	if err != nil {
		return p, fmt.Errorf("scale: decode-only: %w", err)
	}
	if got != int64(n) {
		return p, fmt.Errorf("scale: decoded %d records, want %d", got, n)
	}
	p.DecodeS = time.Since(t0).Seconds()

	// A load of 1M keys takes a fraction of a second, where tens of
	// milliseconds of noise would move the figure a lot: every size is
	// loaded Loads times, each into an empty store from a source out of
	// the page cache, and LoadS is the median. The last load serves.
	var st *proc.Process
	var store string
	for i := 0; i < r.o.Loads; i++ {
		if st != nil {
			if err := st.Stop(); err != nil {
				return p, err
			}
			if err := os.RemoveAll(store); err != nil {
				return p, fmt.Errorf("scale: %w", err)
			}
			unix.Sync() // the file system's work of the removal, before the next load
		}
		if err := evictFromPageCache(ds.Files); err != nil {
			return p, err
		}
		if store, err = r.dir("keys-store"); err != nil {
			return p, err
		}
		st, err = r.start(fmt.Sprintf("storaged-keys-%d-%d", n, i), func(addr string) []string {
			return []string{r.o.Storaged, "--source", root, "--local-store", store, "--bind", addr, "--log-level", "warn"}
		})
		if err != nil {
			return p, err
		}
		at, err := st.ActiveAt(ctx, dataset.DB, dataset.Version, time.Hour)
		if err != nil {
			st.Stop()
			return p, err
		}
		p.LoadRunsS = append(p.LoadRunsS, at.Sub(st.Started).Seconds())
	}
	defer os.RemoveAll(store)
	defer st.Stop()
	p.LoadS = stats.Median(p.LoadRunsS)
	mem, err := st.Memory()
	if err != nil {
		return p, err
	}
	p.LoadPeakMB = proc.MB(mem.Peak)
	size, err := diskUsage(store)
	if err != nil {
		return p, err
	}
	p.StoreMB = proc.MB(size)
	r.log.Info("loaded", zap.Int("keys", n), zap.Float64("load_s", p.LoadS), zap.Float64("decode_s", p.DecodeS),
		zap.Float64s("load_runs_s", p.LoadRunsS), zap.Float64("peak_mb", p.LoadPeakMB), zap.Float64("store_mb", p.StoreMB))
	// In production the source root is elsewhere (S3, another disk):
	// the node's page cache holds its local store, not the files it
	// loaded from. Here they share one machine, and 100M keys' source
	// and store together are more than its memory.
	if err := evictFromPageCache(ds.Files); err != nil {
		return p, err
	}
	// The GETs measure a node whose memory holds its local store, as one
	// serving for a while does (the 100M-key store is half of this
	// machine's 24 GB); the load, with the source on the same disk, left
	// part of it out of the page cache. Reading it once puts it back.
	t0 = time.Now()
	if err := readAll(store); err != nil {
		return p, err
	}
	r.log.Info("store read into the page cache", zap.Duration("took", time.Since(t0)))

	if err := r.serveKeys(ctx, st, &p); err != nil {
		return p, err
	}
	if mem, err = st.Memory(); err != nil {
		return p, err
	}
	p.ServingMB, p.ServingPeakMB = proc.MB(mem.Current), proc.MB(mem.Peak)
	r.log.Info("served", zap.Int("keys", n), zap.Float64("req/s", p.ReqPerS), zap.Float64("p99_ms", p.P99Ms),
		zap.Float64("serving_mb", p.ServingMB), zap.Int64("errors", p.Errors))
	return p, nil
}

// serveKeys measures random GETs over all of p.Keys: closed-loop rounds
// for the throughput, then open loop at half of it for the latency.
func (r *run) serveKeys(ctx context.Context, st *proc.Process, p *KeysPoint) error {
	n := p.Keys
	keys := func(dst []byte, rng *rand.Rand) []byte { return dataset.AppendPath(dst, rng.IntN(n)) }
	var rates []float64
	for i := 0; i < r.o.Rounds; i++ {
		res, err := load.Run(ctx, load.Options{Addr: st.Addr, Path: keys, Conns: r.o.Conns,
			Warmup: 500 * time.Millisecond, Duration: r.o.Round, Seed: uint64(i)})
		if err != nil {
			return err
		}
		rates = append(rates, res.Rate())
		p.Errors += res.Errors
	}
	p.ReqPerS = stats.Median(rates)
	p.HalfRate = p.ReqPerS / 2
	res, err := load.Run(ctx, load.Options{Addr: st.Addr, Path: keys, Conns: r.o.Conns,
		Warmup: 500 * time.Millisecond, Duration: 2 * r.o.Round, Rate: p.HalfRate, Seed: 100})
	if err != nil {
		return err
	}
	p.Errors += res.Errors
	p.P50Ms = stats.Millis(stats.Percentile(res.Latencies, 0.5))
	p.P99Ms = stats.Millis(stats.Percentile(res.Latencies, 0.99))
	return nil
}

// diskUsage is the space dir's files take on disk: allocated blocks, as
// du counts them.
func diskUsage(dir string) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			total += st.Blocks * 512
		} else {
			total += info.Size()
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("scale: sizing %s: %w", dir, err)
	}
	return total, nil
}

// evictFromPageCache asks the kernel to drop files' cached pages.
func evictFromPageCache(files []string) error {
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return fmt.Errorf("scale: %w", err)
		}
		err = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
		f.Close()
		if err != nil {
			return fmt.Errorf("scale: dropping %s from the page cache: %w", name, err)
		}
	}
	return nil
}

// readAll reads every file under dir once, to bring it into the page
// cache.
func readAll(dir string) error {
	buf := make([]byte, 1<<20)
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		f, err := os.Open(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // a temporary file storaged renamed meanwhile
		}
		if err != nil {
			return fmt.Errorf("scale: %w", err)
		}
		defer f.Close()
		for {
			_, err := f.Read(buf)
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return fmt.Errorf("scale: reading %s: %w", path, err)
			}
		}
	})
}
