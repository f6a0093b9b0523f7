// Command routerd is spangle's router sidecar: it answers key lookups
// from the storaged replicas that hold them. See the package
// spangle/routerd/daemon and docs/design.md.
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

	"spangle/routerd/config"
	"spangle/routerd/daemon"
	"spangle/shared/buildinfo"
	"spangle/shared/cliflags"
	"spangle/shared/gcpace"
	"spangle/shared/logging"
)

func main() {
	cfg, err := config.Parse(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if errors.Is(err, cliflags.ErrVersion) {
		fmt.Println("routerd", buildinfo.Get())
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "routerd:", err)
		os.Exit(2)
	}
	log, err := logging.New(cfg.LogLevel, cfg.LogFormat)
	if err != nil {
		fmt.Fprintln(os.Stderr, "routerd:", err)
		if errors.Is(err, logging.ErrBadLevel) || errors.Is(err, logging.ErrBadFormat) {
			os.Exit(2)
		}
		os.Exit(1)
	}
	defer log.Sync()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go gcpace.Run(ctx, cfg.GCHeadroom, gcpace.DefaultFloor, time.Second)
	if err := daemon.Run(ctx, cfg, log); err != nil {
		log.Error("routerd: stopped", zap.Error(err))
		os.Exit(1)
	}
	log.Info("routerd: stopped")
}
