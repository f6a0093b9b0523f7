// Command spanglescale is `make bench-scale`: it measures how spangle's
// costs grow with keys per node and dbs per cluster (issue 21; see
// spangle/bench/scale), prints the tables, and writes results.json,
// table.md, keys.png and dbs.png to -out.
//
//	spanglescale [-keys 1M,10M,100M] [-dbs 10,100,500] [-out bench/results-scale]
package main
