package logging

import (
	"errors"
	"testing"

	"go.uber.org/zap/zapcore"
)

func TestNewSetsTheLevel(t *testing.T) {
	for _, tc := range []struct {
		name string
		want zapcore.Level // the lowest level enabled
	}{
		{"debug", zapcore.DebugLevel},
		{"info", zapcore.InfoLevel},
		{"", zapcore.InfoLevel},
		{"WARN", zapcore.WarnLevel},
		{"error", zapcore.ErrorLevel},
	} {
		log, err := New(tc.name)
		if err != nil {
			t.Fatalf("New(%q): %v", tc.name, err)
		}
		core := log.Core()
		if !core.Enabled(tc.want) {
			t.Errorf("New(%q): %v not enabled", tc.name, tc.want)
		}
		if tc.want > zapcore.DebugLevel && core.Enabled(tc.want-1) {
			t.Errorf("New(%q): %v enabled, want only %v and above", tc.name, tc.want-1, tc.want)
		}
	}
}

func TestNewRefusesAnUnknownLevel(t *testing.T) {
	for _, name := range []string{"loud", "verbose", "infoo"} {
		log, err := New(name)
		if !errors.Is(err, ErrBadLevel) {
			t.Errorf("New(%q) = %v, %v; want an error wrapping ErrBadLevel", name, log, err)
		}
	}
}
