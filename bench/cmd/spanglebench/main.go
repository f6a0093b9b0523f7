package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"spangle/bench/peers"
	"spangle/bench/suite"
	"spangle/shared/cliflags"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	var err error
	if len(os.Args) > 1 && (os.Args[1] == "serve-trivial" || os.Args[1] == "serve-proxy") {
		err = servePeer(ctx, os.Args[1], os.Args[2:])
	} else {
		err = bench(ctx, os.Args[1:])
	}
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "spanglebench:", err)
		os.Exit(1)
	}
}

func bench(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("spanglebench", flag.ContinueOnError)
	quick := fs.Bool("quick", false, "everyday mode: 200k keys, 3 short rounds, no 10M-key run (under 2 minutes)")
	out := fs.String("out", "bench/results.json", "write the results as JSON here")
	keys := fs.Int("keys", 0, "dataset keys (default 1000000, quick 200000)")
	big := fs.Int("big-keys", -1, "keys of the memory run (default 10000000 in full mode, 0 in quick mode; 0 skips it)")
	parquetBig := fs.Int("parquet-big-mb", 0, "section parquet-big: storaged's peak RSS loading one Parquet file of about this many MB (0 skips it)")
	uncompressed := fs.Bool("uncompressed", false, "write the dataset uncompressed (default block-compressed, with load also measured on an uncompressed copy)")
	codec := fs.String("codec", "", "Hadoop codec class of the compressed dataset (default SnappyCodec)")
	conns := fs.Int("conns", 32, "load generator connections")
	rounds := fs.Int("rounds", 0, "rounds per comparison (default 7, quick 3)")
	round := fs.Duration("round", 0, "closed-loop round length (default 3s, quick 1s)")
	bin := fs.String("bin", "bin", "directory holding the storaged and routerd binaries")
	tmp := fs.String("tmp", "", "parent of the run's temporary dir (default the system's)")
	keep := fs.Bool("keep", false, "keep the temporary dir (dataset, stores, process logs)")
	stConfig := fs.String("storaged-config", "", "pass --config FILE to every storaged (to compare tunings)")
	sequins := fs.String("sequins", os.Getenv("SPANGLE_BENCH_SEQUINS"), "section sequins: a sequins binary to run beside storaged (scripts/build-sequins.sh builds one; default $SPANGLE_BENCH_SEQUINS; none skips the section)")
	sections := fs.String("sections", "", "comma-separated sections to run: load,storaged,routerd,batch,big,s3,sparkey,parquet,parquet-big,tls,sequins (default all)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *big < 0 {
		*big = 10_000_000
		if *quick {
			*big = 0
		}
	}
	zc := zap.NewDevelopmentConfig()
	zc.EncoderConfig.EncodeTime = zapcore.TimeEncoderOfLayout(time.TimeOnly)
	zc.DisableStacktrace = true
	zc.DisableCaller = true
	log, err := zc.Build()
	if err != nil {
		return err
	}
	defer log.Sync()
	rep, err := suite.Run(ctx, suite.Options{
		Quick: *quick, Keys: *keys, BigKeys: *big, ParquetBigMB: *parquetBig, Uncompressed: *uncompressed, Codec: *codec,
		Conns: *conns, Rounds: *rounds, Round: *round,
		Storaged: *bin + "/storaged", Routerd: *bin + "/routerd", Sequins: *sequins,
		TempDir: *tmp, Keep: *keep, Logger: log,
		Sections:     cliflags.SplitList(*sections),
		StoragedArgs: configArgs(*stConfig),
	})
	if rep != nil {
		if werr := rep.Markdown(os.Stdout); werr != nil {
			return werr
		}
		if err == nil && *out != "" {
			if werr := rep.WriteJSON(*out); werr != nil {
				return werr
			}
			fmt.Fprintf(os.Stderr, "results written to %s\n", *out)
		}
	}
	return err
}

// servePeer runs one of the peer servers until ctx ends.
func servePeer(ctx context.Context, kind string, args []string) error {
	fs := flag.NewFlagSet(kind, flag.ContinueOnError)
	bind := fs.String("bind", "127.0.0.1:0", "listen address")
	size := fs.Int("body-size", 100, "serve-trivial: body size in bytes")
	target := fs.String("target", "", "serve-proxy: the storaged to proxy to, http://host:port")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if kind == "serve-trivial" {
		return peers.Serve(ctx, *bind, peers.Trivial(peers.TrivialBody(*size)))
	}
	h, err := peers.ReverseProxy(*target)
	if err != nil {
		return err
	}
	return peers.Serve(ctx, *bind, h)
}

func configArgs(path string) []string {
	if path == "" {
		return nil
	}
	return []string{"--config", path}
}
