package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"spangle/bench/scale"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	err := run(ctx, os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "spanglescale:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("spanglescale", flag.ContinueOnError)
	keys := fs.String("keys", "1M,10M,100M", "keys dimension sizes, comma-separated (k and M suffixes); empty skips it")
	dbs := fs.String("dbs", "10,100,500", "dbs dimension sizes, comma-separated; empty skips it")
	files := fs.Int("files", 0, "data files of every keys dataset (default: about 256 MiB a file, at least 8)")
	conns := fs.Int("conns", 32, "load generator connections")
	rounds := fs.Int("rounds", 3, "closed-loop GET rounds per keys size")
	loads := fs.Int("loads", 3, "loads of each keys size into an empty store; the median is the load time")
	round := fs.Duration("round", 3*time.Second, "length of a closed-loop round")
	bin := fs.String("bin", "bin", "directory holding the storaged and routerd binaries")
	tmp := fs.String("tmp", "", "parent of the run's temporary dir (default the system's; needs about 2.2x the largest dataset free)")
	keep := fs.Bool("keep", false, "keep the temporary dir (datasets, stores, process logs)")
	sameGroups := fs.Bool("same-groups", false, "do not ask ext4 to spread the run's dirs away from recently removed files (see bench/README.md, issue 25)")
	dbsLog := fs.String("dbs-log-level", "warn", "--log-level of the dbs dimension's storaged (info logs every version's load; see -keep)")
	out := fs.String("out", "bench/results-scale", "directory for results.json, table.md, keys.png and dbs.png")
	note := fs.String("note", "", "a line written above the figures (say, what kind of run this was)")
	from := fs.String("from", "", "measure nothing: redraw the table and plots of this results.json into -out")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	ks, err := sizes(*keys)
	if err != nil {
		return fmt.Errorf("-keys: %w", err)
	}
	ds, err := sizes(*dbs)
	if err != nil {
		return fmt.Errorf("-dbs: %w", err)
	}
	zc := zap.NewDevelopmentConfig()
	zc.EncoderConfig.EncodeTime = zapcore.TimeEncoderOfLayout(time.TimeOnly)
	zc.DisableStacktrace, zc.DisableCaller = true, true
	log, err := zc.Build()
	if err != nil {
		return err
	}
	defer log.Sync()
	var res *scale.Results
	if *from != "" {
		if res, err = scale.ReadJSON(*from); err != nil {
			return err
		}
		*note = res.Note
	} else {
		res, err = scale.Run(ctx, scale.Options{
			Keys: ks, DBs: ds, SkipKeys: len(ks) == 0, SkipDBs: len(ds) == 0, Files: *files,
			Conns: *conns, Rounds: *rounds, Round: *round, Loads: *loads,
			Storaged: filepath.Join(*bin, "storaged"), Routerd: filepath.Join(*bin, "routerd"),
			TempDir: *tmp, Keep: *keep, SameGroups: *sameGroups, DBsLogLevel: *dbsLog, Note: *note, Logger: log,
		})
	}
	if res == nil {
		return err
	}
	var table bytes.Buffer
	if werr := res.Markdown(&table); werr != nil {
		return werr
	}
	os.Stdout.Write(table.Bytes())
	if err != nil {
		return err
	}
	if err := res.WriteJSON(filepath.Join(*out, "results.json")); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(*out, "table.md"), table.Bytes(), 0o644); err != nil {
		return err
	}
	plots, err := res.Plot(*out, *note)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "results, table and plots %v written to %s\n", plots, *out)
	return nil
}

// sizes parses "1M,10M,100k,500".
func sizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		mult := 1
		switch {
		case strings.HasSuffix(f, "M"):
			mult, f = 1_000_000, strings.TrimSuffix(f, "M")
		case strings.HasSuffix(f, "k"):
			mult, f = 1000, strings.TrimSuffix(f, "k")
		}
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("bad size %q", f)
		}
		out = append(out, n*mult)
	}
	return out, nil
}
