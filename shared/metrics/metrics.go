package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"spangle/shared/buildinfo"
)

// NewRegistry returns a new registry holding the Go runtime and process
// collectors. It is never Prometheus' global registry, so that several
// daemons (a whole cluster in a test) can live in one process.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// BuildInfo returns a gauge named name, always 1, whose labels (version,
// commit, goversion) say which build runs: Prometheus' build_info
// convention, so that a dashboard can count the nodes of each build.
func BuildInfo(name string, in buildinfo.Info) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: name, Help: "Always 1; the labels say which build of spangle runs.",
		ConstLabels: prometheus.Labels{"version": in.Version, "commit": in.Commit, "goversion": in.GoVersion},
	}, func() float64 { return 1 })
}

// Register registers every collector on reg, stopping at the first
// error.
func Register(reg prometheus.Registerer, cs ...prometheus.Collector) error {
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
