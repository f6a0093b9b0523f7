package proctest_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"spangle/shared/proctest"
)

// TestStorageProcessLifecycle runs the real storaged binary on the
// repository's sample data through every method a test uses.
func TestStorageProcessLifecycle(t *testing.T) {
	bin, err := proctest.Build(t.TempDir(), "spangle/storaged")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("../../testdata/sample/baby-names"); err != nil {
		t.Fatalf("sample data: %v", err)
	}
	addr := proctest.FreeAddr(t)
	p := proctest.Start(t, bin, "--source", "../../testdata/sample", "--local-store", t.TempDir(), "--bind", addr)
	proctest.WaitHealthy(t, addr, 30*time.Second)
	checkHandle(t, addr)
	pid := p.PID()
	if pid == 0 || !p.Running() {
		t.Fatalf("PID %d, Running %v after start", pid, p.Running())
	}

	p.Kill()
	if p.Running() || p.PID() != 0 {
		t.Fatalf("after Kill: Running %v, PID %d", p.Running(), p.PID())
	}
	p.Kill() // a second kill is harmless

	p.Restart()
	proctest.WaitHealthy(t, addr, 30*time.Second)
	if p.PID() == pid {
		t.Errorf("Restart kept PID %d", pid)
	}
	p.Stop()
	if p.Running() {
		t.Error("Running after Stop")
	}
	if log := p.LogTail(1000); strings.Count(log, "storaged listening") != 2 || !strings.Contains(log, "storaged stopped") {
		t.Errorf("log does not show two starts and a graceful stop:\n%s", log)
	}
}
