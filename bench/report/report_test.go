package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestNewRowVerdicts(t *testing.T) {
	for _, c := range []struct {
		name      string
		row       Row
		wantMeets string
		wantRatio float64
	}{
		{"throughput meets", NewRow("get", "req/s", 90, "trivial", 100, "", Target{Kind: RatioAtLeast, Limit: 0.8}), "yes", 0.9},
		{"throughput misses", NewRow("get", "req/s", 70, "trivial", 100, "", Target{Kind: RatioAtLeast, Limit: 0.8}), "no", 0.7},
		{"time ratio meets", NewRow("load", "s", 3, "decode", 2, "", Target{Kind: RatioAtMost, Limit: 2}), "yes", 1.5},
		{"time ratio misses", NewRow("load", "s", 5, "decode", 2, "", Target{Kind: RatioAtMost, Limit: 2}), "no", 2.5},
		{"value below", NewRow("rss", "MB", 120, "", 0, "", Target{Kind: ValueBelow, Limit: 300}), "yes", 0},
		{"value not below", NewRow("rss", "MB", 300, "", 0, "", Target{Kind: ValueBelow, Limit: 300}), "no", 0},
		{"no target", NewRow("p50", "ms", 1, "trivial", 0.5, ""), "n/a", 2},
		{"skipped target is not judged", NewRow("load", "s", 9, "decode", 8, "",
			Target{Kind: RatioAtMost, Limit: 2}, Target{Kind: ValueBelow, Limit: 1.8, Skip: "compressed"}), "yes", 9.0 / 8},
		{"all skipped", NewRow("load", "s", 9, "", 0, "", Target{Kind: ValueBelow, Limit: 1.8, Skip: "compressed"}), "n/a", 0},
		{"one of two misses", NewRow("load", "s", 3, "decode", 2, "",
			Target{Kind: RatioAtMost, Limit: 2}, Target{Kind: ValueBelow, Limit: 1.8}), "no", 1.5},
		{"ratio target without a peer figure", NewRow("get", "req/s", 90, "trivial", 0, "", Target{Kind: RatioAtLeast, Limit: 0.8}), "no", 0},
	} {
		if c.row.Meets != c.wantMeets || c.row.Ratio != c.wantRatio {
			t.Errorf("%s: meets %q ratio %v, want %q %v", c.name, c.row.Meets, c.row.Ratio, c.wantMeets, c.wantRatio)
		}
	}
}

func sample() *Report {
	return &Report{
		Started: time.Date(2026, 11, 23, 1, 0, 0, 0, time.UTC), Duration: 90 * time.Second, Mode: "quick",
		Machine: "2 CPUs", Setup: []string{"dataset: 200k keys"},
		Rows: []Row{
			NewRow("storaged GET throughput", "req/s", 40000, "trivial net/http", 50000, "a|b",
				Target{Kind: RatioAtLeast, Limit: 0.8}),
			NewRow("storaged GET p99 at half load", "ms", 1.5, "trivial net/http at the same rate", 0.5, "",
				Target{Kind: ValueBelow, Limit: 1}),
			{Metric: "routerd uncached GET", Meets: "n/a", Note: "not measured: routerd exited"},
		},
	}
}

func TestMarkdown(t *testing.T) {
	var b bytes.Buffer
	if err := sample().Markdown(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"| metric | spangle | limit / peer | ratio | target | meets | note |",
		"| storaged GET throughput | 40000 req/s | 50000 req/s (trivial net/http) | 0.80x | >= 0.8x | yes | a\\|b |",
		"| storaged GET p99 at half load | 1.500 ms | 0.500 ms (trivial net/http at the same rate) | 3.00x | < 1 ms | no |  |",
		"| routerd uncached GET | - | - | - | - | n/a | not measured: routerd exited |",
		"Machine: 2 CPUs",
		"- dataset: 200k keys",
		"Run took 1m30s.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("markdown lacks %q; got:\n%s", want, out)
		}
	}
	// Every table line has the same number of cells.
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "|") {
			if n := strings.Count(strings.ReplaceAll(line, `\|`, ""), "|"); n != 8 {
				t.Errorf("line has %d separators, want 8: %s", n, line)
			}
		}
	}
}

func TestWriteJSONRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "results.json")
	want := sample()
	if err := want.WriteJSON(path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got Report
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Rows) != 3 || got.Rows[0].Ratio != 0.8 || got.Rows[0].Meets != "yes" || got.Rows[1].Meets != "no" ||
		got.Rows[0].Targets[0].Kind != RatioAtLeast || got.Mode != "quick" || !got.Started.Equal(want.Started) {
		t.Errorf("round trip lost data: %+v", got)
	}
	if _, err := os.Stat(path + ".tmp"); err == nil {
		t.Error("temporary file left behind")
	}
}

func TestWithRatioJudgesAgain(t *testing.T) {
	r := NewRow("get", "req/s", 70, "trivial", 100, "", Target{Kind: RatioAtLeast, Limit: 0.8})
	if r.Meets != "no" {
		t.Fatalf("ratio of medians 0.7 meets %q", r.Meets)
	}
	r = r.WithRatio(0.85)
	if r.Ratio != 0.85 || r.Meets != "yes" {
		t.Fatalf("WithRatio(0.85): ratio %v meets %q", r.Ratio, r.Meets)
	}
}

// A path that is not a regular file (a FIFO here, /dev/null in use) is
// written in place, never replaced by the temporary file's rename.
func TestWriteFileKeepsSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "out")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 1)
	go func() {
		b, _ := os.ReadFile(fifo)
		got <- b
	}()
	if err := WriteFile(fifo, []byte("{}\n")); err != nil {
		t.Fatal(err)
	}
	if b := <-got; string(b) != "{}\n" {
		t.Errorf("the FIFO's reader got %q", b)
	}
	fi, err := os.Lstat(fifo)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("%s is %v after WriteFile, no longer a FIFO", fifo, fi.Mode())
	}
	// A regular file is still replaced whole.
	file := filepath.Join(dir, "results.json")
	for _, s := range []string{"old, longer\n", "new\n"} {
		if err := WriteFile(file, []byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "new\n" {
		t.Errorf("results.json = %q, %v", b, err)
	}
}
