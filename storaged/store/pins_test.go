package store

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"spangle/shared/topo"
)

// Pin steps survive a reopen of the store; invalid entries are dropped;
// a file too large to be ours is refused, and the next save replaces it.
func TestPinSteps(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.PinSteps(); err != nil || len(got) != 0 {
		t.Fatalf("new store: %v, %v; want none", got, err)
	}
	if err := s.SavePinStep("a", PinStep{Version: "v1", Generation: 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.SavePinStep("b", PinStep{Generation: 7}); err != nil {
		t.Fatal(err)
	}
	if err := s.SavePinStep("a", PinStep{Version: "v2", Generation: 2}); err != nil {
		t.Fatal(err)
	}
	if err := s.SavePinStep("../x", PinStep{Generation: 1}); err == nil {
		t.Fatal("a bad db name was saved")
	}
	s2, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s2.PinSteps()
	if err != nil || len(got) != 2 || got["a"] != (PinStep{Version: "v2", Generation: 2}) || got["b"] != (PinStep{Generation: 7}) {
		t.Fatalf("after reopen: %+v, %v", got, err)
	}
	if l, _ := s2.List(); len(l) != 0 {
		t.Fatalf("the record is taken for versions: %v", l)
	}

	// Entries no reader would take are dropped, the rest kept.
	path := filepath.Join(dir, pinsName)
	bad := `{"a":{"version":"v2","generation":2},"b":{"version":"../v","generation":3},"c":{"generation":0},"d":{"generation":9007199254740992}}`
	if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := s2.PinSteps(); err != nil || len(got) != 1 || got["a"].Generation != 2 {
		t.Fatalf("invalid entries: %+v, %v; want only a", got, err)
	}
	if topo.MaxPinGeneration+1 != 9007199254740992 {
		t.Fatal("the test's out-of-range generation is not MaxPinGeneration+1")
	}

	// Too large: refused with the reason, and replaced by the next save.
	if err := os.WriteFile(path, []byte(strings.Repeat(" ", MaxPinsFileSize+1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s2.PinSteps(); err == nil || !strings.Contains(err.Error(), "over") {
		t.Fatalf("oversized record: %v, want an error saying so", err)
	}
	if err := s2.SavePinStep("a", PinStep{Version: "v3", Generation: 3}); err != nil {
		t.Fatal(err)
	}
	if got, err := s2.PinSteps(); err != nil || got["a"] != (PinStep{Version: "v3", Generation: 3}) {
		t.Fatalf("after replacing an oversized record: %+v, %v", got, err)
	}
}
