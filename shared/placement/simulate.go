package placement

import (
	"fmt"
	"strings"
)

// SimResult is what Simulate measures for one strategy and cluster size:
// the cost of one join and one leave against the ideal, and the balance
// before and after each.
type SimResult struct {
	Strategy                string
	Nodes                   int
	Partitions, Replication int

	// JoinMoves is the copies fetched when one node joins; JoinIdeal is
	// the newcomer's fair share, all copies / (Nodes+1).
	JoinMoves int
	JoinIdeal float64
	// LeaveMoves is the copies fetched when one node leaves; LeaveIdeal
	// is the copies that node held.
	LeaveMoves int
	LeaveIdeal float64

	// MaxLoad and MeanLoad are copies per node before the change;
	// Bound is MaxLoad(Nodes, ...), ceil(1.1 × mean).
	MaxLoad  int
	MeanLoad float64
	Bound    int
	// JoinMax, JoinBound, LeaveMax and LeaveBound are the same after the
	// join and after the leave.
	JoinMax, JoinBound   int
	LeaveMax, LeaveBound int
}

// SimNodes names the shard ids of a simulated cluster of n nodes, so the
// command and the tests simulate the same clusters.
func SimNodes(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("node-%04d", i)
	}
	return ids
}

// Simulate places partitions × replication copies on nodes, then adds
// joiner and, separately, removes leaver, and measures the copies each
// change moves. joiner must not be in nodes; leaver must be.
func Simulate(st Strategy, nodes []string, partitions, replication int, joiner, leaver string) SimResult {
	base := st.Place(nodes, partitions, replication, nil)
	joined := st.Place(append(append([]string(nil), nodes...), joiner), partitions, replication, base)
	var rest []string
	for _, id := range nodes {
		if id != leaver {
			rest = append(rest, id)
		}
	}
	left := st.Place(rest, partitions, replication, base)

	copies := partitions * min(replication, len(nodes)+1)
	res := SimResult{
		Strategy:    st.Name(),
		Nodes:       len(nodes),
		Partitions:  partitions,
		Replication: replication,
		JoinMoves:   Moves(base, joined),
		JoinIdeal:   float64(copies) / float64(len(nodes)+1),
		LeaveMoves:  Moves(base, left),
		LeaveIdeal:  float64(Load(base)[leaver]),
		MaxLoad:     maxOf(Load(base)),
		Bound:       MaxLoad(len(nodes), partitions, replication),
		JoinMax:     maxOf(Load(joined)),
		JoinBound:   MaxLoad(len(nodes)+1, partitions, replication),
		LeaveMax:    maxOf(Load(left)),
		LeaveBound:  MaxLoad(len(rest), partitions, replication),
	}
	res.MeanLoad = float64(partitions*min(replication, len(nodes))) / float64(len(nodes))
	return res
}

func maxOf(load map[string]int) int {
	m := 0
	for _, l := range load {
		m = max(m, l)
	}
	return m
}

// Markdown renders results as a table for the closing note.
func Markdown(results []SimResult) string {
	var b strings.Builder
	b.WriteString("| strategy | nodes | join moved / ideal | ratio | leave moved / ideal | ratio | max / mean / bound | after join max / bound | after leave max / bound |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range results {
		fmt.Fprintf(&b, "| %s | %d | %d / %.1f | %.2f | %d / %.0f | %.2f | %d / %.2f / %d | %d / %d | %d / %d |\n",
			r.Strategy, r.Nodes,
			r.JoinMoves, r.JoinIdeal, ratio(r.JoinMoves, r.JoinIdeal),
			r.LeaveMoves, r.LeaveIdeal, ratio(r.LeaveMoves, r.LeaveIdeal),
			r.MaxLoad, r.MeanLoad, r.Bound,
			r.JoinMax, r.JoinBound, r.LeaveMax, r.LeaveBound)
	}
	return b.String()
}

func ratio(moved int, ideal float64) float64 {
	if ideal == 0 {
		return 0
	}
	return float64(moved) / ideal
}
