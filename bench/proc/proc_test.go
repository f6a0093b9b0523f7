package proc

import (
	"testing"
	"time"
)

// TestMemory reads a real process's memory: sleep maps its binary and
// libc, so it has file pages and some anonymous memory, and VmRSS is at
// least their sum (the rest is shared memory). Right after Start the
// child may not have reached exec yet (a forked child maps no file
// pages of its own), so the test waits, up to a bound, for sleep to run.
func TestMemory(t *testing.T) {
	p, err := Start("sleep", "", t.TempDir(), "/bin/sleep", "30")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	var m Memory
	for deadline := time.Now().Add(10 * time.Second); ; {
		m, err = p.Memory()
		if err != nil {
			t.Fatal(err)
		}
		if (m.File > 0 && m.Anon > 0) || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if m.File <= 0 || m.Anon <= 0 {
		t.Errorf("RssFile %d, RssAnon %d: want both above 0", m.File, m.Anon)
	}
	if m.Current < m.Anon+m.File || m.Peak < m.Current {
		t.Errorf("VmRSS %d below RssAnon %d + RssFile %d, or VmHWM %d below VmRSS", m.Current, m.Anon, m.File, m.Peak)
	}
}
