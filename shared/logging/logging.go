package logging

import (
	"errors"
	"fmt"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// ErrBadLevel is returned (wrapped) by New for a level name zap does not
// know, so that a main can tell a configuration error (exit status 2)
// from a logger that cannot be built.
var ErrBadLevel = errors.New("logging: bad log_level")

// New returns zap's production logger at level: debug, info, warn, error,
// dpanic, panic or fatal, in any case; "" is info. An unknown name gives
// an error wrapping ErrBadLevel rather than a silent default, so a typo
// in a config never hides the logs its author asked for.
func New(level string) (*zap.Logger, error) {
	l, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadLevel, err)
	}
	zc := zap.NewProductionConfig()
	zc.Level = zap.NewAtomicLevelAt(l)
	log, err := zc.Build()
	if err != nil {
		return nil, fmt.Errorf("logging: building the logger: %w", err)
	}
	return log, nil
}
