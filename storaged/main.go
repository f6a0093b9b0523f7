// Command storaged serves the newest version of every database in a
// source root of Hadoop SequenceFiles over HTTP. See the package
// spangle/storaged/daemon and docs/design.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.uber.org/zap"

	"spangle/shared/cliflags"
	"spangle/shared/gcpace"
	"spangle/shared/logging"
	"spangle/storaged/config"
	"spangle/storaged/daemon"
)

// gcFloor is the least GOGC percentage storaged's collector runs at. Its
// live heap is mostly the tables' indexes and bloom filters, flat byte
// slices that cost nothing to mark: a quarter of their size as room to
// grow keeps a 100M-key node's heap near 1.25x of them rather than the
// 2x of GOGC=100 (see gcpace.Percent and bench/README.md).
const gcFloor = 25

func main() {
	cfg, err := config.Parse(os.Args[1:], os.Stderr)
	cliflags.ExitOnParseError("storaged", err)
	log := logging.NewForCommand("storaged", cfg.LogLevel, cfg.LogFormat)
	defer log.Sync()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	refresh := make(chan struct{}, 1)
	go func() {
		for range hup {
			select {
			case refresh <- struct{}{}:
			default:
			}
		}
	}()
	go gcpace.Run(ctx, cfg.GCHeadroom, gcFloor, time.Second)
	if err := daemon.Run(ctx, cfg, log, refresh); err != nil {
		log.Error("storaged failed", zap.Error(err))
		os.Exit(1)
	}
}
