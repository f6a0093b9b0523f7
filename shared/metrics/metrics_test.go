package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Each registry has the runtime and process series, and two registries
// are independent: the same series registers in both.
func TestNewRegistry(t *testing.T) {
	a, b := NewRegistry(), NewRegistry()
	for _, reg := range []*prometheus.Registry{a, b} {
		if err := reg.Register(prometheus.NewCounter(prometheus.CounterOpts{Name: "spangle_test_total", Help: "test"})); err != nil {
			t.Fatal(err)
		}
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, f := range families {
			seen[f.GetName()] = true
		}
		for _, name := range []string{"go_goroutines", "go_memstats_heap_alloc_bytes", "process_resident_memory_bytes", "spangle_test_total"} {
			if !seen[name] {
				t.Errorf("registry lacks %s", name)
			}
		}
	}
}
