package scale

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// net is a change window's count less what the idle window counted over
// as long: the part due to the change.
func (p DBsPoint) net(change, idle int64) float64 {
	if p.Idle.Seconds <= 0 {
		return float64(change)
	}
	return float64(change) - float64(idle)*p.Change.Seconds/p.Idle.Seconds
}

// changePackets is ZooKeeper's packets in and out for one db's new
// version, net of idle traffic.
func (p DBsPoint) changePackets() float64 {
	return p.net(p.Change.ZK.PacketsIn+p.Change.ZK.PacketsOut, p.Idle.ZK.PacketsIn+p.Idle.ZK.PacketsOut)
}

// changeBytes is what one process exchanged with ZooKeeper (both ways)
// for one db's new version, net of idle traffic.
func (p DBsPoint) changeBytes(name string) float64 {
	c, i := p.Change.Clients[name], p.Idle.Clients[name]
	return p.net(c.BytesIn+c.BytesOut, i.BytesIn+i.BytesOut)
}

// storagedNames are the storaged processes' names in the point, sorted.
func (p DBsPoint) storagedNames() []string {
	var out []string
	for name := range p.Clients {
		if strings.HasPrefix(name, "storaged") {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// Markdown writes the run as two tables, one per dimension, with what a
// reader needs to trust them above.
func (res *Results) Markdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "## spangle scale (%s)\n\n", res.Started.UTC().Format(time.RFC3339))
	if res.Note != "" {
		fmt.Fprintf(&b, "**%s**\n\n", res.Note)
	}
	fmt.Fprintf(&b, "Machine: %s; load average at the end %s. Run took %s.\n\n", res.Machine, res.LoadEnd, res.Duration.Round(time.Second))
	if len(res.Keys) > 0 {
		b.WriteString("### Keys on one storaged (uncompressed, 100-byte values)\n\n")
		b.WriteString("| keys | files | data MB | load s (median) | decode-only s | load / decode | load µs per key | per key vs smallest | peak RSS loading MB | RSS serving MB | RSS bytes per key | store on disk MB | GET req/s | vs smallest | p50 / p99 ms at half load | errors |\n")
		b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
		first := res.Keys[0]
		for _, p := range res.Keys {
			fmt.Fprintf(&b, "| %s | %d | %.0f | %.2f | %.2f | %.2fx | %.3f | %.2fx | %.0f | %.0f | %.1f | %.0f | %.0f | %.2fx | %.2f / %.2f | %d |\n",
				count(p.Keys), p.Files, p.DataMB, p.LoadS, p.DecodeS, p.LoadS/p.DecodeS, 1e6*p.LoadS/float64(p.Keys),
				(p.LoadS/float64(p.Keys))/(first.LoadS/float64(first.Keys)),
				p.LoadPeakMB, p.ServingMB, p.ServingMB*(1<<20)/float64(p.Keys), p.StoreMB,
				p.ReqPerS, p.ReqPerS/first.ReqPerS, p.P50Ms, p.P99Ms, p.Errors)
		}
		b.WriteString("\n")
		var loads []string
		for _, p := range res.Keys {
			if len(p.LoadRunsS) > 0 {
				each := make([]string, len(p.LoadRunsS))
				for i, s := range p.LoadRunsS {
					each[i] = fmt.Sprintf("%.2f", s)
				}
				loads = append(loads, count(p.Keys)+" "+strings.Join(each, ", "))
			}
		}
		if len(loads) > 0 {
			fmt.Fprintf(&b, "Each load, s: %s.\n\n", strings.Join(loads, "; "))
		}
	}
	if len(res.DBs) > 0 {
		b.WriteString("### Dbs in one cluster (3 storaged, replication 2, one ZooKeeper, routerd)\n\n")
		b.WriteString("| dbs | partitions | start to all served s | to all replicated s | znodes | watches | ZK data KB | ZK KB in/out since start, per storaged | routerd | idle ZK packets/s | one db's new version: ZK packets, all (net of idle) | its ZK bytes per storaged (net) | to routerd, all (net) | watches after | new version to routerd s | complete in ZK to routerd ms | routerd RSS (heap) MB | storaged RSS (heap) MB, max | storaged open files, max | status page KB | render ms |\n")
		b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
		for _, p := range res.DBs {
			var start, change []string
			for _, n := range p.storagedNames() {
				c := p.Clients[n]
				start = append(start, fmt.Sprintf("%.0f/%.0f", float64(c.BytesIn)/1024, float64(c.BytesOut)/1024))
				change = append(change, fmt.Sprintf("%.0f", p.changeBytes(n)))
			}
			rd := p.Clients["routerd"]
			idle := 0.0
			if p.Idle.Seconds > 0 {
				idle = float64(p.Idle.ZK.PacketsIn+p.Idle.ZK.PacketsOut) / p.Idle.Seconds
			}
			fmt.Fprintf(&b, "| %d | %d | %.1f | %.1f | %d | %d | %.0f | %s | %.0f/%.0f | %.1f | %d (%.0f) | %s | %d (%.0f) | %d | %.2f | %.0f | %.0f (%.0f) | %.0f (%.0f) | %d | %.0f | %.0f |\n",
				p.DBs, p.Partitions, p.ActiveS, p.SettledS, p.ZK.Znodes, p.ZK.Watches, float64(p.ZK.DataBytes)/1024,
				strings.Join(start, ", "), float64(rd.BytesIn)/1024, float64(rd.BytesOut)/1024, idle,
				p.Change.ZK.PacketsIn+p.Change.ZK.PacketsOut, p.changePackets(), strings.Join(change, ", "),
				p.Change.Clients["routerd"].BytesIn+p.Change.Clients["routerd"].BytesOut, p.changeBytes("routerd"), p.ZK.Watches+p.Idle.ZK.Watches+p.Change.ZK.Watches,
				p.NewVersionS, p.CompleteToRouterdMs, p.RouterdMB, p.RouterdHeapMB, p.StoragedMB, p.StoragedHeapMB, p.StoragedFDs,
				p.PageKB, p.RenderMs)
		}
		b.WriteString("\n")
	}
	for _, f := range res.Failures {
		fmt.Fprintf(&b, "- not measured: %s\n", f)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// count prints a key count briefly: 1M, 200k.
func count(n int) string {
	switch {
	case n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}
