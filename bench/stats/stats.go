package stats

import (
	"math"
	"slices"
	"time"
)

// Percentile returns the q-quantile (0 <= q <= 1) of sorted latencies by
// the nearest-rank method: the smallest value with at least q of the
// values at or below it. It returns 0 for no values.
func Percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(q * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

// Median returns the median of vs (the mean of the middle two for an
// even count), without reordering vs. It returns 0 for no values.
func Median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Spread returns (max-min)/median of vs: how far rounds disagreed, to
// show beside a median. It returns 0 for fewer than two values.
func Spread(vs []float64) float64 {
	if len(vs) < 2 {
		return 0
	}
	m := Median(vs)
	if m == 0 {
		return 0
	}
	return (slices.Max(vs) - slices.Min(vs)) / m
}

// Millis converts a duration to fractional milliseconds.
func Millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
