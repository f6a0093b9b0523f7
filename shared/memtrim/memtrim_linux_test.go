package memtrim

import (
	"os"
	"strings"
	"testing"
)

const sampleSmaps = `00400000-01b1f000 r-xp 00000000 103:02 1234 /opt/bin/storaged
Size:              23676 kB
Rss:               19900 kB
Anonymous:             0 kB
VmFlags: rd ex mr mw me dw
01b1f000-0327d000 r--p 0171f000 103:02 1234 /opt/bin/storaged
Size:              23928 kB
Rss:               17700 kB
Anonymous:             8 kB
VmFlags: rd mr mw me dw
0327d000-0338b000 rw-p 02e7d000 103:02 1234 /opt/bin/storaged
Size:               1080 kB
Rss:                 600 kB
Anonymous:           100 kB
VmFlags: rd wr mr mw me dw ac
0338b000-0338c000 ---p 00000000 00:00 0 
Size:                  4 kB
Rss:                   0 kB
Anonymous:             0 kB
7f0000000000-7f0000100000 r--s 00000000 103:02 99 /store/p-0/000002.ldb
Size:               1024 kB
Rss:                1024 kB
Anonymous:             0 kB
7f0000100000-7f0000200000 r--p 00000000 103:02 77 /opt/my bin/storaged
Size:               1024 kB
Rss:                 512 kB
Anonymous:             0 kB
7f0000200000-7f0000300000 r--p 00000000 103:02 1234 /opt/bin/storaged
Size:               1024 kB
Rss:                 512 kB
VmFlags: rd mr mw me dw
`

// Only the executable's read-only private mappings are candidates, with
// their sizes read; a path with a space is matched whole.
func TestDroppable(t *testing.T) {
	got, err := droppable(strings.NewReader(sampleSmaps), "/opt/bin/storaged")
	if err != nil {
		t.Fatal(err)
	}
	want := []mapping{
		{start: 0x400000, end: 0x1b1f000, rss: 19900 << 10, anonymous: 0},
		{start: 0x1b1f000, end: 0x327d000, rss: 17700 << 10, anonymous: 8 << 10},
		{start: 0x7f0000200000, end: 0x7f0000300000, rss: 512 << 10, anonymous: -1},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("mapping %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	spaced, err := droppable(strings.NewReader(sampleSmaps), "/opt/my bin/storaged")
	if err != nil {
		t.Fatal(err)
	}
	if len(spaced) != 1 || spaced[0].start != 0x7f0000100000 {
		t.Fatalf("path with a space: got %+v", spaced)
	}
}

// executableRSS is how many bytes of the test binary's read-only
// mappings are resident now.
func executableRSS(t *testing.T) int64 {
	t.Helper()
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ms, err := droppable(f, exe)
	if err != nil {
		t.Fatal(err)
	}
	var rss int64
	for _, m := range ms {
		rss += m.rss
	}
	return rss
}

// Trim drops the executable's pages from RSS, and the process runs on:
// the code it needs faults back in.
func TestTrimDropsExecutablePages(t *testing.T) {
	before := executableRSS(t)
	if before <= 0 {
		t.Fatalf("no resident pages of the executable seen (%d): the running test binary must have some", before)
	}
	r, err := Trim()
	if err != nil {
		t.Fatal(err)
	}
	after := executableRSS(t)
	t.Logf("executable resident %d KiB before, %d KiB after; dropped %d KiB, %d mappings skipped", before>>10, after>>10, r.ExecutableDropped>>10, r.Skipped)
	// What the test ran since (reading smaps) faulted back in.
	if r.ExecutableDropped < before/2 || after >= before {
		t.Fatalf("executable resident %d bytes before, %d after, %d dropped: want at least half dropped, and less after", before, after, r.ExecutableDropped)
	}
	// Code and data that were dropped still work.
	if s := strings.Repeat("ab", 3); s != "ababab" {
		t.Fatalf("Repeat gave %q", s)
	}
}
