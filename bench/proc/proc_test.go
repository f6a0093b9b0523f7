package proc

import (
	"testing"
)

// TestMemory reads a real process's memory: sleep maps its binary and
// libc, so it has file pages and some anonymous memory, and VmRSS is at
// least their sum (the rest is shared memory).
func TestMemory(t *testing.T) {
	p, err := Start("sleep", "", t.TempDir(), "/bin/sleep", "30")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	m, err := p.Memory()
	if err != nil {
		t.Fatal(err)
	}
	if m.File <= 0 || m.Anon <= 0 {
		t.Errorf("RssFile %d, RssAnon %d: want both above 0", m.File, m.Anon)
	}
	if m.Current < m.Anon+m.File || m.Peak < m.Current {
		t.Errorf("VmRSS %d below RssAnon %d + RssFile %d, or VmHWM %d below VmRSS", m.Current, m.Anon, m.File, m.Peak)
	}
}
