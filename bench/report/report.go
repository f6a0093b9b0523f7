package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Kind says how a Target judges a Row.
type Kind string

// Target kinds.
const (
	// RatioAtLeast is met when Row.Ratio >= Target.Limit (throughput).
	RatioAtLeast Kind = "ratio>="
	// RatioAtMost is met when Row.Ratio <= Target.Limit (time).
	RatioAtMost Kind = "ratio<="
	// ValueBelow is met when Row.Value < Target.Limit (latency, memory,
	// absolute time).
	ValueBelow Kind = "value<"
)

// Target is a goal from the issues. A row may carry several; it meets
// its targets when every applicable one is met.
type Target struct {
	Kind  Kind    `json:"kind"`
	Limit float64 `json:"limit"`
	// Skip, when set, says why the target does not apply to this run
	// (say, an absolute load time measured on compressed files); the
	// target is then shown but not judged.
	Skip string `json:"skip,omitempty"`
}

// Meets reports whether r meets t, and false for a skipped target or a
// row without the figure it needs.
func (t Target) Meets(r Row) bool {
	switch t.Kind {
	case RatioAtLeast:
		return r.Ratio > 0 && r.Ratio >= t.Limit
	case RatioAtMost:
		return r.Ratio > 0 && r.Ratio <= t.Limit
	case ValueBelow:
		return r.Value < t.Limit
	}
	return false
}

// String prints the target as the table shows it, in the row's unit.
func (t Target) String(unit string) string {
	var s string
	switch t.Kind {
	case RatioAtLeast:
		s = fmt.Sprintf(">= %gx", t.Limit)
	case RatioAtMost:
		s = fmt.Sprintf("<= %gx", t.Limit)
	case ValueBelow:
		s = fmt.Sprintf("< %g %s", t.Limit, unit)
	default:
		s = string(t.Kind)
	}
	if t.Skip != "" {
		s += " (n/a: " + t.Skip + ")"
	}
	return s
}

// Row is one measured figure.
type Row struct {
	// Metric names what was measured, e.g. "storaged GET".
	Metric string `json:"metric"`
	// Unit of Value and PeerValue, e.g. "req/s", "ms", "MB".
	Unit string `json:"unit"`
	// Value is spangle's figure (a median over the rounds).
	Value float64 `json:"value"`
	// Peer names the limit or peer measured beside it, "" when none.
	Peer string `json:"peer,omitempty"`
	// PeerValue is the peer's figure, in Unit.
	PeerValue float64 `json:"peer_value,omitempty"`
	// Ratio is Value / PeerValue, 0 without a peer.
	Ratio   float64  `json:"ratio,omitempty"`
	Targets []Target `json:"targets,omitempty"`
	// Meets is "yes", "no", or "n/a" when no target is judged.
	Meets string `json:"meets"`
	// Note carries what a reader needs to trust the figure (rounds,
	// spread, errors).
	Note string `json:"note,omitempty"`
}

// NewRow builds a row and fills in its ratio and verdict.
func NewRow(metric, unit string, value float64, peer string, peerValue float64, note string, targets ...Target) Row {
	r := Row{Metric: metric, Unit: unit, Value: value, Peer: peer, PeerValue: peerValue, Targets: targets, Note: note}
	if peer != "" && peerValue > 0 {
		r.Ratio = value / peerValue
	}
	r.judge()
	return r
}

// WithRatio returns r with its ratio replaced (say, by the median of
// per-round ratios, steadier on a noisy machine than the ratio of
// medians) and its verdict judged again.
func (r Row) WithRatio(ratio float64) Row {
	r.Ratio = ratio
	r.judge()
	return r
}

func (r *Row) judge() {
	r.Meets = "n/a"
	for _, t := range r.Targets {
		if t.Skip != "" {
			continue
		}
		if !t.Meets(*r) {
			r.Meets = "no"
			break
		}
		r.Meets = "yes"
	}
}

// Report is a whole run.
type Report struct {
	// Started is when the run began.
	Started time.Time `json:"started"`
	// Duration is how long the run took.
	Duration time.Duration `json:"duration_ns"`
	// Mode is "quick" or "full".
	Mode string `json:"mode"`
	// Machine describes where it ran (CPUs, model, load): figures only
	// compare within one run.
	Machine string `json:"machine"`
	// Setup lists the dataset and load parameters.
	Setup []string `json:"setup"`
	Rows  []Row    `json:"rows"`
}

// Markdown writes the report as a markdown table with its setup above.
func (r *Report) Markdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "## spangle benchmark (%s mode, %s)\n\n", r.Mode, r.Started.UTC().Format(time.RFC3339))
	fmt.Fprintf(&b, "Machine: %s\n\n", r.Machine)
	for _, s := range r.Setup {
		fmt.Fprintf(&b, "- %s\n", s)
	}
	if len(r.Setup) > 0 {
		b.WriteString("\n")
	}
	b.WriteString("| metric | spangle | limit / peer | ratio | target | meets | note |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	for _, row := range r.Rows {
		peer := "-"
		if row.Peer != "" {
			peer = fmt.Sprintf("%s %s (%s)", num(row.PeerValue), row.Unit, row.Peer)
		}
		ratio := "-"
		if row.Ratio > 0 {
			ratio = fmt.Sprintf("%.2fx", row.Ratio)
		}
		var ts []string
		for _, t := range row.Targets {
			ts = append(ts, t.String(row.Unit))
		}
		target := "-"
		if len(ts) > 0 {
			target = strings.Join(ts, "; ")
		}
		value := "-"
		if row.Unit != "" {
			value = num(row.Value) + " " + row.Unit
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n",
			cell(row.Metric), value, cell(peer), ratio, cell(target), row.Meets, cell(row.Note))
	}
	if r.Duration > 0 {
		fmt.Fprintf(&b, "\nRun took %s.\n", r.Duration.Round(time.Second))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON writes the report to path (through a temporary file, so a
// failed run leaves the previous results whole).
func (r *Report) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return WriteFile(path, append(b, '\n'))
}

// WriteFile writes b to path through a temporary file renamed over it, so
// a failed run leaves the previous file whole. A path that exists and is
// not a regular file (/dev/null, a FIFO) is written in place: a rename
// would replace the device itself (as root, `-out /dev/null` turned
// /dev/null into a file only root could write).
func WriteFile(path string, b []byte) error {
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return fmt.Errorf("report: %w", err)
		}
		return nil
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("report: %w", err)
		}
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// cell keeps a table cell on one line and its pipes literal.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

// num prints a figure with about three significant digits, no exponent.
func num(v float64) string {
	a := math.Abs(v)
	switch {
	case a == 0:
		return "0"
	case a >= 1000:
		return fmt.Sprintf("%.0f", v)
	case a >= 100:
		return fmt.Sprintf("%.1f", v)
	case a >= 10:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.3f", v)
	}
}
