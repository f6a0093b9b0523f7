package placement

import (
	"fmt"
	"math/rand"
	"testing"
)

// The targets for rendezvous: a join or a leave moves at most
// 1.25 × the ideal copies, and no node holds more than ceil(1.1 × mean).
const moveTarget = 1.25

func checkTargets(t *testing.T, r SimResult) {
	t.Helper()
	if float64(r.JoinMoves) > moveTarget*r.JoinIdeal {
		t.Errorf("%s n=%d: join moved %d copies, ideal %.2f", r.Strategy, r.Nodes, r.JoinMoves, r.JoinIdeal)
	}
	if float64(r.LeaveMoves) > moveTarget*r.LeaveIdeal {
		t.Errorf("%s n=%d: leave moved %d copies, ideal %.0f", r.Strategy, r.Nodes, r.LeaveMoves, r.LeaveIdeal)
	}
	if r.MaxLoad > r.Bound || r.JoinMax > r.JoinBound || r.LeaveMax > r.LeaveBound {
		t.Errorf("%s n=%d: max copies %d/%d/%d above bound %d/%d/%d (base/join/leave)",
			r.Strategy, r.Nodes, r.MaxLoad, r.JoinMax, r.LeaveMax, r.Bound, r.JoinBound, r.LeaveBound)
	}
}

// TestSimulation is the table of the issue: 512 partitions, replication
// 3, one join and one leave. Run with -v to see it.
func TestSimulation(t *testing.T) {
	var results []SimResult
	for _, st := range []Strategy{Sequins{}, Rendezvous{}} {
		for _, n := range []int{3, 10, 100, 1000} {
			nodes := SimNodes(n)
			r := Simulate(st, nodes, 512, 3, "node-joiner", nodes[n/2])
			results = append(results, r)
			if st.Name() == "rendezvous" {
				checkTargets(t, r)
			}
		}
	}
	t.Logf("\n%s", Markdown(results))
}

// TestSimulationOtherNodes checks the targets do not hinge on which node
// joins or leaves.
func TestSimulationOtherNodes(t *testing.T) {
	for _, n := range []int{3, 10, 100, 1000} {
		nodes := SimNodes(n)
		for k := 0; k < 6; k++ {
			joiner := fmt.Sprintf("10.1.%d.%d:9599", k, n)
			leaver := nodes[(k*7919)%n]
			checkTargets(t, Simulate(Rendezvous{}, nodes, 512, 3, joiner, leaver))
		}
	}
}

// TestChurn applies a sequence of single joins and leaves, each from the
// previous placement, so the targets hold away from a fresh placement too.
func TestChurn(t *testing.T) {
	for _, start := range []int{5, 10, 100} {
		rng := rand.New(rand.NewSource(int64(start)))
		nodes := SimNodes(start)
		p := Rendezvous{}.Place(nodes, 512, 3, nil)
		next := start
		for step := 0; step < 40; step++ {
			var shards []string
			var ideal float64
			what := "join"
			if rng.Intn(2) == 0 && len(nodes) > 4 {
				what = "leave"
				i := rng.Intn(len(nodes))
				ideal = float64(Load(p)[nodes[i]])
				shards = append(append(shards, nodes[:i]...), nodes[i+1:]...)
			} else {
				shards = append(append(shards, nodes...), fmt.Sprintf("node-%04d", next))
				next++
				ideal = float64(512*3) / float64(len(shards))
			}
			np := Rendezvous{}.Place(shards, 512, 3, p)
			checkValid(t, fmt.Sprintf("start=%d step %d %s", start, step, what), np, shards, 512, 3)
			if m := Moves(p, np); float64(m) > moveTarget*ideal {
				t.Errorf("start=%d step %d: %s to %d nodes moved %d copies, ideal %.1f", start, step, what, len(shards), m, ideal)
			}
			nodes, p = shards, np
		}
	}
}

func BenchmarkRendezvous1000Join(b *testing.B) {
	nodes := SimNodes(1000)
	base := Rendezvous{}.Place(nodes, 512, 3, nil)
	joined := append(append([]string(nil), nodes...), "node-joiner")
	for b.Loop() {
		Rendezvous{}.Place(joined, 512, 3, base)
	}
}
