//go:build e2e

package e2e

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"spangle/e2e/load"
)

// row is one scenario's line in the final table.
type row struct {
	name        string
	reads       int
	failed      int
	regressions int
	p99         time.Duration
	recovery    time.Duration
	recoveryOf  string // what the recovery time measures
	ok          bool
	note        string
}

// report gathers the rows; scenarios add theirs as they end.
type report struct {
	mu   sync.Mutex
	rows []row // guarded by mu
}

func (r *report) add(x row) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rows = append(r.rows, x)
}

// fromResult fills a row's counts from a load result.
func fromResult(name string, res *load.Result) row {
	return row{name: name, reads: res.Reads, failed: res.Failed, regressions: res.Regressions, p99: res.Quantile(0.99)}
}

func (r *report) print(w io.Writer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintln(w)
	fmt.Fprintln(w, "spangle e2e scenarios")
	line := strings.Repeat("-", 118)
	fmt.Fprintln(w, line)
	fmt.Fprintf(w, "%-22s %9s %7s %11s %9s %10s  %-28s %s\n", "scenario", "reads", "failed", "regressions", "p99", "recovery", "(recovery is)", "result")
	fmt.Fprintln(w, line)
	for _, x := range r.rows {
		res := "ok"
		if !x.ok {
			res = "FAIL"
		}
		if x.note != "" {
			res += ": " + x.note
		}
		fmt.Fprintf(w, "%-22s %9d %7d %11d %9s %10s  %-28s %s\n", x.name, x.reads, x.failed, x.regressions,
			round(x.p99), round(x.recovery), x.recoveryOf, res)
	}
	fmt.Fprintln(w, line)
}

func round(d time.Duration) string {
	switch {
	case d == 0:
		return "0"
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Second:
		return d.Round(100 * time.Microsecond).String()
	default:
		return d.Round(10 * time.Millisecond).String()
	}
}
