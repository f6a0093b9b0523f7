// Package scale measures how spangle's costs grow with the work (issue
// 21), along two dimensions: keys on one storaged (load time against
// decode-only, memory, store size, random-GET speed over all keys) and
// dbs in one cluster of three storaged, a real ZooKeeper and routerd
// (time to ACTIVE, ZooKeeper's znodes, watches and traffic per node,
// routerd's memory, how long one db's new version takes to reach
// routerd, the status page's render time in Chromium). It writes the
// figures as JSON and a markdown table, and draws a log-log plot per
// dimension. `make bench-scale` runs it through bench/cmd/spanglescale.
package scale
