package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"spangle/shared/buildinfo"
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

func TestBuildInfoIsOneWithTheBuildAsLabels(t *testing.T) {
	in := buildinfo.Info{Version: "v1.2.3", Commit: "abc", GoVersion: "go1.99"}
	reg := prometheus.NewRegistry()
	reg.MustRegister(BuildInfo("spangle_test_build_info", in))
	want := `
# HELP spangle_test_build_info Always 1; the labels say which build of spangle runs.
# TYPE spangle_test_build_info gauge
spangle_test_build_info{commit="abc",goversion="go1.99",version="v1.2.3"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "spangle_test_build_info"); err != nil {
		t.Fatal(err)
	}
}
