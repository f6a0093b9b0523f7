// Package suite is the benchmark itself: it writes the dataset, starts
// storaged, routerd and their peers as processes, alternates the
// contenders over several rounds with one load generator, and reduces
// what it measured to a report of medians against the issues' targets.
package suite
