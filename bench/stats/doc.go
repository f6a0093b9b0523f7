// Package stats reduces measurements to the figures the benchmark
// reports: percentiles of latencies and medians over rounds.
package stats
