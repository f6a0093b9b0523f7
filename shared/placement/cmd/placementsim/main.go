// Command placementsim prints, as a markdown table, how many partition
// copies each assignment strategy moves on one join and one leave, and
// how evenly it spreads copies, for clusters of 3 to 1000 nodes.
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"spangle/shared/placement"
)

func main() {
	partitions := flag.Int("partitions", 512, "partitions per version")
	replication := flag.Int("replication", 3, "copies of each partition")
	sizes := flag.String("nodes", "3,10,100,1000", "comma-separated cluster sizes")
	strategies := flag.String("strategies", "sequins,rendezvous", "comma-separated strategies")
	flag.Parse()

	var results []placement.SimResult
	for _, name := range strings.Split(*strategies, ",") {
		st, err := placement.ByName(strings.TrimSpace(name))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		for _, f := range strings.Split(*sizes, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 2 {
				fmt.Fprintf(os.Stderr, "placementsim: bad cluster size %q (want an integer >= 2)\n", f)
				os.Exit(2)
			}
			nodes := placement.SimNodes(n)
			results = append(results, placement.Simulate(st, nodes, *partitions, *replication, "node-joiner", nodes[n/2]))
		}
	}
	fmt.Print(placement.Markdown(results))
}
