package logging

import (
	"errors"
	"fmt"
	"os"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// ErrBadLevel is returned (wrapped) by New for a level name zap does not
// know, so that a main can tell a configuration error (exit status 2)
// from a logger that cannot be built.
var ErrBadLevel = errors.New("logging: bad log_level")

// ErrBadFormat is returned (wrapped) by New for a format other than json
// and console.
var ErrBadFormat = errors.New("logging: bad log_format")

// New returns zap's production logger at level: debug, info, warn, error,
// dpanic, panic or fatal, in any case; "" is info. format is "json" (or
// "") or "console". An unknown name gives an error wrapping ErrBadLevel
// or ErrBadFormat rather than a silent default, so a typo in a config
// never hides the logs its author asked for.
func New(level, format string) (*zap.Logger, error) {
	return build(level, format, []string{"stderr"})
}

// build is New writing to the zap sinks paths.
func build(level, format string, paths []string) (*zap.Logger, error) {
	l, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadLevel, err)
	}
	zc := zap.NewProductionConfig()
	zc.Level = zap.NewAtomicLevelAt(l)
	zc.DisableStacktrace = true
	zc.OutputPaths = paths
	switch format {
	case "", "json":
	case "console":
		zc.Encoding = "console"
		zc.EncoderConfig.EncodeTime = zapcore.ISO8601TimeEncoder
		zc.EncoderConfig.EncodeLevel = zapcore.CapitalLevelEncoder
		zc.EncoderConfig.EncodeDuration = zapcore.StringDurationEncoder
	default:
		return nil, fmt.Errorf("%w: %q is not json or console", ErrBadFormat, format)
	}
	log, err := zc.Build()
	if err != nil {
		return nil, fmt.Errorf("logging: building the logger: %w", err)
	}
	return log, nil
}

// NewForCommand is New for a command's main: on error it prints the
// command's name and the error and exits, 2 for a bad level or format
// (a usage error, as a bad flag is) and 1 for anything else.
func NewForCommand(name, level, format string) *zap.Logger {
	log, err := New(level, format)
	if err == nil {
		return log
	}
	fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
	if errors.Is(err, ErrBadLevel) || errors.Is(err, ErrBadFormat) {
		os.Exit(2)
	}
	os.Exit(1)
	return nil
}
