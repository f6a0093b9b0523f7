package scale

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"spangle/bench/proc"
	"spangle/bench/report"
	"spangle/bench/suite"
)

// Options configures a run. Zero values select the defaults noted.
type Options struct {
	// Keys are the sizes of the keys dimension; default 1M, 10M, 100M.
	// Empty with SkipKeys set runs none.
	Keys []int
	// DBs are the sizes of the dbs dimension; default 10, 100, 500.
	DBs []int
	// SkipKeys and SkipDBs leave a dimension out.
	SkipKeys, SkipDBs bool
	// Files is the file (and partition) count of every keys dataset; by
	// default filesFor picks it from the size.
	Files int
	// DBKeys and DBValueSize shape each db of the dbs dimension; default
	// 800 keys (100 a partition) of 16 bytes.
	DBKeys, DBValueSize int
	// Conns is the load generator's concurrency; default 32.
	Conns int
	// Rounds of Round each measure the closed-loop throughput; default 3
	// of 3s.
	Rounds int
	Round  time.Duration
	// Loads is how many times each keys size is loaded, the median
	// counting; default 3.
	Loads int
	// Storaged and Routerd are the binaries; default bin/storaged and
	// bin/routerd.
	Storaged, Routerd string
	// Chromium is the browser for the status page; default Debian's, or
	// $CHROMIUM.
	Chromium string
	// TempDir is where the run's temporary dir goes; default os.TempDir().
	TempDir string
	// Keep leaves the temporary dir (datasets, stores, logs) behind.
	Keep bool
	// SameGroups leaves the temporary dir's subdirectories where the
	// filesystem would put them by default: on ext4, next to the dirs
	// earlier runs removed (see spread).
	SameGroups bool
	// DBsLogLevel is the --log-level of the dbs dimension's storaged
	// (default warn; info logs each version's load, with Keep).
	DBsLogLevel string
	// Note is written above the figures (say, that this was a small run).
	Note string
	// Logger reports progress; default a no-op logger.
	Logger *zap.Logger
}

func (o *Options) defaults() error {
	if len(o.Keys) == 0 && !o.SkipKeys {
		o.Keys = []int{1_000_000, 10_000_000, 100_000_000}
	}
	if len(o.DBs) == 0 && !o.SkipDBs {
		o.DBs = []int{10, 100, 500}
	}
	if o.SkipKeys {
		o.Keys = nil
	}
	if o.SkipDBs {
		o.DBs = nil
	}
	if o.DBKeys <= 0 {
		o.DBKeys = 800
	}
	if o.DBValueSize <= 0 {
		o.DBValueSize = 16
	}
	if o.Conns <= 0 {
		o.Conns = 32
	}
	if o.Rounds <= 0 {
		o.Rounds = 3
	}
	if o.Loads <= 0 {
		o.Loads = 3
	}
	if o.Round <= 0 {
		o.Round = 3 * time.Second
	}
	if o.Storaged == "" {
		o.Storaged = filepath.Join("bin", "storaged")
	}
	if o.Routerd == "" {
		o.Routerd = filepath.Join("bin", "routerd")
	}
	for _, p := range []*string{&o.Storaged, &o.Routerd} {
		abs, err := filepath.Abs(*p)
		if err != nil {
			return fmt.Errorf("scale: %w", err)
		}
		if _, err := os.Stat(abs); err != nil {
			return fmt.Errorf("scale: %w (run make build first)", err)
		}
		*p = abs
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	return nil
}

// Results are a whole run's figures.
type Results struct {
	Started  time.Time     `json:"started"`
	Duration time.Duration `json:"duration_ns"`
	// Machine describes where it ran; figures compare only within a run.
	Machine string `json:"machine"`
	// Note says what kind of run this was.
	Note string `json:"note,omitempty"`
	// Spread is whether the run's dirs were spread over the filesystem
	// (spreadDirs).
	Spread  bool        `json:"spread,omitempty"`
	LoadEnd string      `json:"load_average_at_end"`
	Keys    []KeysPoint `json:"keys,omitempty"`
	DBs     []DBsPoint  `json:"dbs,omitempty"`
	// Failures are the points that could not be measured, and why.
	Failures []string `json:"failures,omitempty"`
}

// run is one run's state.
type run struct {
	o    Options
	log  *zap.Logger
	tmp  string
	logs string
	seq  int
}

// Run measures every point of both dimensions. A point that fails is
// recorded in Results.Failures and the run goes on; Run fails only when
// nothing can be set up or ctx ends.
func Run(ctx context.Context, o Options) (*Results, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(o.TempDir, "spanglescale-")
	if err != nil {
		return nil, fmt.Errorf("scale: %w", err)
	}
	if o.Keep {
		o.Logger.Info("keeping the run's files", zap.String("dir", tmp))
	} else {
		defer os.RemoveAll(tmp)
	}
	spread := false
	if !o.SameGroups {
		if err := spreadDirs(tmp); err != nil {
			o.Logger.Info("the run's dirs go where the filesystem puts them", zap.Error(err))
		} else {
			spread = true
		}
	}
	r := &run{o: o, log: o.Logger, tmp: tmp, logs: filepath.Join(tmp, "logs")}
	if err := os.MkdirAll(r.logs, 0o755); err != nil {
		return nil, fmt.Errorf("scale: %w", err)
	}
	res := &Results{Started: time.Now(), Machine: suite.Machine(), Note: o.Note, Spread: spread}
	for _, n := range o.Keys {
		if ctx.Err() != nil {
			break
		}
		p, err := r.keysPoint(ctx, n)
		if err != nil {
			r.log.Error("keys point failed", zap.Int("keys", n), zap.Error(err))
			res.Failures = append(res.Failures, fmt.Sprintf("%d keys: %v", n, err))
			continue
		}
		res.Keys = append(res.Keys, p)
	}
	for _, n := range o.DBs {
		if ctx.Err() != nil {
			break
		}
		p, err := r.dbsPoint(ctx, n)
		if err != nil {
			r.log.Error("dbs point failed", zap.Int("dbs", n), zap.Error(err))
			res.Failures = append(res.Failures, fmt.Sprintf("%d dbs: %v", n, err))
			continue
		}
		res.DBs = append(res.DBs, p)
	}
	res.Duration = time.Since(res.Started)
	res.LoadEnd = suite.LoadAvg()
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("scale: %w", err)
	}
	return res, nil
}

// dir returns a fresh directory under the run's dir. Its name ends in
// random characters: ext4 places a top directory's subdirectory
// (spreadDirs) by its name's hash, and the same names in every run
// would put each run's stores where the last run's were just removed.
func (r *run) dir(name string) (string, error) {
	r.seq++
	d, err := os.MkdirTemp(r.tmp, fmt.Sprintf("%s-%d-", name, r.seq))
	if err != nil {
		return "", fmt.Errorf("scale: %w", err)
	}
	return d, nil
}

// start runs a process on a free loopback port; argv builds its command
// line from that address.
func (r *run) start(name string, argv func(addr string) []string) (*proc.Process, error) {
	addr, err := proc.FreeAddr()
	if err != nil {
		return nil, err
	}
	return proc.Start(name, addr, r.logs, argv(addr)...)
}

// WriteJSON writes res to path through a temporary file.
func (res *Results) WriteJSON(path string) error {
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return fmt.Errorf("scale: %w", err)
	}
	if err := report.WriteFile(path, append(b, '\n')); err != nil {
		return fmt.Errorf("scale: %w", err)
	}
	return nil
}

// ReadJSON reads results written by WriteJSON, to draw them again.
func ReadJSON(path string) (*Results, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("scale: %w", err)
	}
	var res Results
	if err := json.Unmarshal(b, &res); err != nil {
		return nil, fmt.Errorf("scale: %s: %w", path, err)
	}
	return &res, nil
}
