package stats

import (
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := func(vs ...int) []time.Duration {
		out := make([]time.Duration, len(vs))
		for i, v := range vs {
			out[i] = time.Duration(v) * time.Millisecond
		}
		return out
	}
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i+1) * time.Millisecond
	}
	for _, c := range []struct {
		name   string
		sorted []time.Duration
		q      float64
		want   time.Duration
	}{
		{"empty", nil, 0.5, 0},
		{"one", ms(7), 0.99, 7 * time.Millisecond},
		{"p0 is the least", ms(1, 2, 3), 0, time.Millisecond},
		{"p100 is the most", ms(1, 2, 3), 1, 3 * time.Millisecond},
		{"median of odd", ms(1, 2, 3), 0.5, 2 * time.Millisecond},
		{"median of even is the lower", ms(1, 2, 3, 4), 0.5, 2 * time.Millisecond},
		{"p99 of 1..100", hundred, 0.99, 99 * time.Millisecond},
		{"p50 of 1..100", hundred, 0.5, 50 * time.Millisecond},
		{"p99.9 of 1..100 is the max", hundred, 0.999, 100 * time.Millisecond},
	} {
		if got := Percentile(c.sorted, c.q); got != c.want {
			t.Errorf("%s: Percentile(q=%v) = %v, want %v", c.name, c.q, got, c.want)
		}
	}
}

func TestMedianAndSpread(t *testing.T) {
	vs := []float64{5, 1, 3}
	if got := Median(vs); got != 3 {
		t.Errorf("Median(5,1,3) = %v, want 3", got)
	}
	if vs[0] != 5 || vs[1] != 1 {
		t.Errorf("Median reordered its input: %v", vs)
	}
	if got := Median([]float64{4, 1, 3, 2}); got != 2.5 {
		t.Errorf("Median(4,1,3,2) = %v, want 2.5", got)
	}
	if got := Median(nil); got != 0 {
		t.Errorf("Median() = %v, want 0", got)
	}
	if got := Spread([]float64{90, 100, 110}); got != 0.2 {
		t.Errorf("Spread(90,100,110) = %v, want 0.2", got)
	}
	if got := Spread([]float64{42}); got != 0 {
		t.Errorf("Spread of one = %v, want 0", got)
	}
}
