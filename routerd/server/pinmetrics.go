package server

import (
	"github.com/prometheus/client_golang/prometheus"

	"spangle/routerd/partmap"
)

// pinCollector reports the pins of the Table's current State at each
// scrape, so the metrics never disagree with what requests are served.
type pinCollector struct {
	table              *partmap.Table
	pinned, generation *prometheus.Desc
}

func newPinCollector(t *partmap.Table) pinCollector {
	return pinCollector{
		table: t,
		pinned: prometheus.NewDesc("spangle_routerd_pinned",
			"1 for each db a _PIN holds at a version (a rollback or a freeze), labelled with that version.",
			[]string{"db", "version"}, nil),
		generation: prometheus.NewDesc("spangle_routerd_pin_generation",
			"The generation of the last pin or unpin routerd acted on, per db ever pinned.",
			[]string{"db"}, nil),
	}
}

func (c pinCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.pinned
	ch <- c.generation
}

func (c pinCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.table.Current()
	for _, db := range st.Map.DBNames() {
		p := st.PinOf(db)
		if p.Generation == 0 {
			continue
		}
		ch <- prometheus.MustNewConstMetric(c.generation, prometheus.GaugeValue, float64(p.Generation), db)
		if p.Pinned != "" {
			ch <- prometheus.MustNewConstMetric(c.pinned, prometheus.GaugeValue, 1, db, p.Pinned)
		}
	}
}
