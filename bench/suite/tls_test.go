package suite

import (
	"runtime/debug"
	"testing"
)

// TestRoomForGenerator: the TLS section raises the generator's collector
// percentage to give its heap generatorGCHeadroom, and puts it back.
func TestRoomForGenerator(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	restore := roomForGenerator()
	during := debug.SetGCPercent(-1)
	debug.SetGCPercent(during)
	restore()
	after := debug.SetGCPercent(100)
	// The live heap of a test binary is far below 64 MB / 4.
	if during < 400 {
		t.Fatalf("collector at %d%% in the section, want room for %d MB", during, generatorGCHeadroom>>20)
	}
	if after != 100 {
		t.Fatalf("collector at %d%% after the section, want 100 back", after)
	}
}
