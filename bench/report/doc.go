// Package report holds the benchmark's results and prints them: one row
// per measured figure, with spangle's figure, the limit or peer it is
// measured against, their ratio, the target and whether the target is
// met, as a markdown table and as JSON.
package report
