package zktopo

import (
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// TestZKLoggerQuietDuringOutage: of the client's once-a-second "failed to
// connect", only the first of an outage is logged, at Warn, the rest at
// Debug; other messages stay at Info; a session coming up starts a new
// outage's count.
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
	want := []zapcore.Level{zapcore.WarnLevel, zapcore.DebugLevel, zapcore.DebugLevel, zapcore.DebugLevel, zapcore.DebugLevel,
		zapcore.InfoLevel, zapcore.WarnLevel}
	if !slices.Equal(levels, want) {
		t.Fatalf("levels %v, want %v", levels, want)
	}
}

// TestFailedConnectIsAWarning: a Conn whose ZooKeeper server refuses
// connections (a real socket, closed) logs that at Warn.
func TestFailedConnectIsAWarning(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now: every dial is refused
	core, logs := observer.New(zapcore.DebugLevel)
	c, err := Open(Options{Servers: []string{addr}, Cluster: "c", Logger: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		for _, e := range logs.All() {
			if strings.HasPrefix(e.Message, "failed to connect") {
				if e.Level != zapcore.WarnLevel {
					t.Fatalf("a failed connection logged at %v: %q", e.Level, e.Message)
				}
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no failed connection logged in 30s: %v", logs.All())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
