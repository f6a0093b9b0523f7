package zktopo

import (
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// TestZKLoggerQuietDuringOutage: of the client's once-a-second "failed to
// connect", only the first of an outage is at Info; other messages stay
// at Info; a session coming up starts a new outage's count.
func TestZKLoggerQuietDuringOutage(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	z := &zkLogger{l: zap.New(core).Sugar()}
	for i := 0; i < 5; i++ {
		z.Printf("failed to connect to %s: %v", "127.0.0.1:1", "refused")
	}
	z.Printf("authentication failed: %v", "x")
	z.failing.Store(false) // what the StateHasSession event does
	z.Printf("failed to connect to %s: %v", "127.0.0.1:1", "refused")
	var levels []zapcore.Level
	for _, e := range logs.All() {
		levels = append(levels, e.Level)
	}
	want := []zapcore.Level{zapcore.InfoLevel, zapcore.DebugLevel, zapcore.DebugLevel, zapcore.DebugLevel, zapcore.DebugLevel,
		zapcore.InfoLevel, zapcore.InfoLevel}
	if len(levels) != len(want) {
		t.Fatalf("levels %v, want %v", levels, want)
	}
	for i := range want {
		if levels[i] != want[i] {
			t.Fatalf("levels %v, want %v", levels, want)
		}
	}
}
