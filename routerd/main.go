// Command routerd is spangle's router sidecar: it answers key lookups
// from the storaged replicas that hold them. See the package
// spangle/routerd/daemon and docs/design.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.uber.org/zap"

	"spangle/routerd/config"
	"spangle/routerd/daemon"
	"spangle/shared/cliflags"
	"spangle/shared/gcpace"
	"spangle/shared/logging"
)

func main() {
	cfg, err := config.Parse(os.Args[1:], os.Stderr)
	cliflags.ExitOnParseError("routerd", err)
	log := logging.NewForCommand("routerd", cfg.LogLevel, cfg.LogFormat)
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
