package suite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"spangle/bench/dataset"
	"spangle/bench/proc"
	"spangle/bench/report"
	"spangle/shared/seqfile"
)

// Options configures a run. Zero values select the defaults noted; Quick
// changes several defaults.
type Options struct {
	// Quick is the everyday mode: a smaller dataset, fewer and shorter
	// rounds, no 10M-key run.
	Quick bool
	// Keys is the dataset's size; default 1,000,000 (quick: 200,000).
	Keys int
	// BigKeys, when positive, adds a storaged run on a dataset of that
	// many keys to measure its memory; default 0 (none). The command
	// sets 10M in full mode.
	BigKeys int
	// ParquetBigMB, when positive, adds the section "parquet-big": the
	// peak RSS of storaged loading one Parquet file of about that many MB
	// (2 KiB values, Snappy), in key order and spread over 8 partitions;
	// default 0 (none).
	ParquetBigMB int
	// Uncompressed writes the dataset without compression; by default it
	// is block-compressed with Codec, and load time is measured on an
	// uncompressed copy as well.
	Uncompressed bool
	// Codec of the block-compressed dataset; default SnappyCodec.
	Codec string
	// Conns is the load generator's concurrency; default 32.
	Conns int
	// Rounds per comparison; default 7 (quick: 3).
	Rounds int
	// Round is one closed-loop round's length; default 3s (quick: 1s).
	Round time.Duration
	// Storaged and Routerd are the binaries under test; default
	// bin/storaged and bin/routerd.
	Storaged, Routerd string
	// Sequins, when set, is a sequins binary (scripts/build-sequins.sh
	// builds one) that the section "sequins" runs beside storaged on the
	// same files; default none: the section says it was skipped.
	Sequins string
	// StoragedArgs are added to every storaged command line (say,
	// --config with LevelDB tuning to compare).
	StoragedArgs []string
	// Self is the spanglebench executable, run with "serve-trivial" and
	// "serve-proxy" for the peers; default os.Executable().
	Self string
	// TempDir is where the run's temporary dir goes; default os.TempDir().
	TempDir string
	// Keep leaves the temporary dir (dataset, stores, logs) behind.
	Keep bool
	// Sections, when not empty, runs only the sections named: "load",
	// "storaged", "routerd", "batch", "big", "s3", "sparkey", "parquet", "parquet-big", "tls", "sequins".
	// Default all.
	Sections []string
	// Logger reports progress; default a no-op logger.
	Logger *zap.Logger
}

func (o *Options) defaults() error {
	if o.Keys <= 0 {
		o.Keys = 1_000_000
		if o.Quick {
			o.Keys = 200_000
		}
	}
	if o.Codec == "" {
		o.Codec = seqfile.SnappyCodec
	}
	if o.Conns <= 0 {
		o.Conns = 32
	}
	if o.Rounds <= 0 {
		o.Rounds = 7
		if o.Quick {
			o.Rounds = 3
		}
	}
	if o.Round <= 0 {
		o.Round = 3 * time.Second
		if o.Quick {
			o.Round = time.Second
		}
	}
	if o.Storaged == "" {
		o.Storaged = filepath.Join("bin", "storaged")
	}
	if o.Routerd == "" {
		o.Routerd = filepath.Join("bin", "routerd")
	}
	if o.Self == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("suite: %w", err)
		}
		o.Self = exe
	}
	for _, p := range []*string{&o.Storaged, &o.Routerd, &o.Self} {
		abs, err := filepath.Abs(*p)
		if err != nil {
			return fmt.Errorf("suite: %w", err)
		}
		if _, err := os.Stat(abs); err != nil {
			return fmt.Errorf("suite: %w (run make build first)", err)
		}
		*p = abs
	}
	if o.Sequins != "" {
		abs, err := filepath.Abs(o.Sequins)
		if err != nil {
			return fmt.Errorf("suite: %w", err)
		}
		if _, err := os.Stat(abs); err != nil {
			return fmt.Errorf("suite: the sequins binary: %w", err)
		}
		o.Sequins = abs
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	return nil
}

// bench is one run's state.
type bench struct {
	o    Options
	log  *zap.Logger
	tmp  string // the run's temporary dir
	logs string // process logs
	rep  *report.Report
	seq  int // numbers store dirs
}

// Run measures everything and returns the report. A section that fails
// (say, routerd does not start) leaves a row saying so and the run goes
// on; Run fails only when nothing can be measured.
func Run(ctx context.Context, o Options) (*report.Report, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(o.TempDir, "spanglebench-")
	if err != nil {
		return nil, fmt.Errorf("suite: %w", err)
	}
	if o.Keep {
		o.Logger.Info("keeping the run's files", zap.String("dir", tmp))
	} else {
		defer os.RemoveAll(tmp)
	}
	b := &bench{o: o, log: o.Logger, tmp: tmp, logs: filepath.Join(tmp, "logs")}
	if err := os.MkdirAll(b.logs, 0o755); err != nil {
		return nil, fmt.Errorf("suite: %w", err)
	}
	mode := "full"
	if o.Quick {
		mode = "quick"
	}
	b.rep = &report.Report{Started: time.Now(), Mode: mode, Machine: Machine()}
	comp := "block-compressed " + codecName(o.Codec)
	if o.Uncompressed {
		comp = "uncompressed"
	}
	b.rep.Setup = []string{
		fmt.Sprintf("dataset: %d keys, 100-byte values, 8 %s SequenceFiles (the project's writer), pre-sharded in key order as a Hadoop job writes them", o.Keys, comp),
		fmt.Sprintf("load generator: spangle's own HTTP/1.1 keep-alive client, %d connections, random keys, in this process; servers are separate processes on the same CPUs", o.Conns),
		fmt.Sprintf("closed loop: %d rounds of %v per contender, alternated, medians; open loop: at half of spangle's median maximum, the peer at the same rate, latency from when each request was due", o.Rounds, o.Round),
		"storaged and routerd with their defaults (fsync on, after a version is active; no block cache: tables read in place through the page cache; routerd cache 64 MiB unless off)",
	}
	start := time.Now()

	primary, err := b.writeDataset(ctx, "src", o.Keys, !o.Uncompressed)
	if err != nil {
		return nil, err
	}
	if b.runs("load") {
		b.loadSection(ctx, primary)
	}
	if !o.Uncompressed && b.runs("load") {
		plain, err := b.writeDataset(ctx, "src-plain", o.Keys, false)
		if err != nil {
			b.failed("load (uncompressed)", err)
		} else {
			b.loadSection(ctx, plain)
			os.RemoveAll(plain.Root)
		}
	}
	if b.runs("sparkey") {
		b.sparkeySection(ctx)
	}
	if b.runs("parquet") {
		b.parquetSection(ctx)
	}
	if o.ParquetBigMB > 0 && b.runs("parquet-big") && ctx.Err() == nil {
		b.parquetBigRows(ctx, o.ParquetBigMB)
	}
	if b.runs("s3") {
		b.s3Section(ctx, primary)
	}
	if b.runs("sequins") {
		b.sequinsSection(ctx, primary)
	}
	if b.runs("storaged") || b.runs("routerd") {
		b.serveSection(ctx, primary)
	}
	if b.runs("batch") {
		b.batchSection(ctx, primary)
	}
	if b.runs("tls") {
		b.tlsSection(ctx, primary)
	}
	if o.BigKeys > 0 && b.runs("big") && ctx.Err() == nil {
		os.RemoveAll(primary.Root)
		b.bigSection(ctx)
	}
	b.rep.Duration = time.Since(start)
	b.rep.Setup = append(b.rep.Setup, "load average at the end: "+LoadAvg())
	if err := ctx.Err(); err != nil {
		return b.rep, fmt.Errorf("suite: %w", err)
	}
	return b.rep, nil
}

// writeDataset writes a dataset under the run's dir.
func (b *bench) writeDataset(ctx context.Context, name string, keys int, compressed bool) (*dataset.Dataset, error) {
	root := filepath.Join(b.tmp, name)
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("suite: %w", err)
	}
	do := dataset.Options{Keys: keys}
	if compressed {
		do.Compression, do.Codec = seqfile.Block, b.o.Codec
	}
	t0 := time.Now()
	ds, err := dataset.Write(ctx, root, do)
	if err != nil {
		return nil, fmt.Errorf("suite: writing the dataset: %w", err)
	}
	b.log.Info("dataset written", zap.String("dir", root), zap.Int("keys", keys), zap.Bool("compressed", compressed),
		zap.Int64("bytes", ds.Bytes), zap.Duration("took", time.Since(t0)))
	return ds, nil
}

// runs reports whether section is to run.
func (b *bench) runs(section string) bool {
	return len(b.o.Sections) == 0 || slices.Contains(b.o.Sections, section)
}

// codecName is a codec class's short name: SnappyCodec.
func codecName(class string) string {
	return class[strings.LastIndexByte(class, '.')+1:]
}

// failed records a section that could not be measured.
func (b *bench) failed(metric string, err error) {
	b.log.Error("section failed", zap.String("metric", metric), zap.Error(err))
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	b.rep.Rows = append(b.rep.Rows, report.Row{Metric: metric, Meets: "n/a", Note: "not measured: " + msg})
}

// storeDir returns a fresh local store dir.
func (b *bench) storeDir() string {
	b.seq++
	return filepath.Join(b.tmp, fmt.Sprintf("store-%d", b.seq))
}

// Machine describes the machine, since figures only compare within a run.
func Machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	load := LoadAvg()
	return fmt.Sprintf("%d CPUs (%s), shared with other work (load average at start %s); %s %s/%s; load generator and servers on the same CPUs",
		runtime.NumCPU(), model, load, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// launchStoraged starts storaged on a source root with a local store, on
// a free loopback port, and returns at once.
func (b *bench) launchStoraged(name, root, store string, extra ...string) (*proc.Process, error) {
	addr, err := proc.FreeAddr()
	if err != nil {
		return nil, err
	}
	argv := append([]string{b.o.Storaged, "--source", root, "--local-store", store,
		"--bind", addr, "--log-level", "warn"}, b.o.StoragedArgs...)
	argv = append(argv, extra...)
	return proc.Start(name, addr, b.logs, argv...)
}

// startStoraged starts storaged on a source root with a local store and
// waits until the dataset's version is ACTIVE; it returns the process
// and the time from start to ACTIVE.
func (b *bench) startStoraged(ctx context.Context, name, root, store string) (*proc.Process, time.Duration, error) {
	p, err := b.launchStoraged(name, root, store)
	if err != nil {
		return nil, 0, err
	}
	at, err := activeAt(ctx, p)
	if err != nil {
		p.Stop()
		return nil, 0, err
	}
	return p, at.Sub(p.Started), nil
}

// LoadAvg is the 1, 5 and 15 minute load averages: how busy the shared
// machine was.
func LoadAvg() string {
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) >= 3 {
			return strings.Join(f[:3], " ")
		}
	}
	return "?"
}
