package versions

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"spangle/shared/wire"
	"spangle/storaged/loader"
)

// DefaultProgressEvery is how often a load that runs longer logs how far
// it has come (Options.ProgressEvery).
const DefaultProgressEvery = 5 * time.Second

// progressOf is the status page's and /healthz's view of a load under
// way: nil unless vs is loading and has begun reading the source.
func progressOf(vs *vstate, now time.Time) *wire.LoadProgress {
	if !vs.phase.loading() || vs.progress == nil {
		return nil
	}
	s := vs.progress.Snapshot(now)
	if s.Started.IsZero() {
		return nil // still waiting for the cluster, or copying from peers
	}
	return &wire.LoadProgress{
		FilesDone: s.FilesDone, FilesTotal: s.FilesTotal,
		BytesDone: s.BytesDone, BytesTotal: s.BytesTotal,
		Records: s.Records, Started: s.Started.UTC(),
		ElapsedSeconds:   s.Elapsed.Seconds(),
		BytesPerSecond:   s.BytesPerSec,
		RecordsPerSecond: s.RecPerSec,
		PreshardedFiles:  s.Presharded, SpreadFiles: s.Spread,
	}
}

// logProgress logs, every period until stop is closed, how far the load
// of db/version has come; a load shorter than that logs nothing here.
func logProgress(log *zap.Logger, every time.Duration, db, version string, p *loader.Progress, stop <-chan struct{}) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			s := p.Snapshot(now)
			if s.Started.IsZero() {
				continue
			}
			log.Info("load progress", zap.String("db", db), zap.String("version", version),
				zap.Int64("files_done", s.FilesDone), zap.Int64("files_total", s.FilesTotal),
				zap.Int64("bytes_done", s.BytesDone), zap.Int64("bytes_total", s.BytesTotal),
				zap.Int64("records", s.Records),
				zap.Int64("presharded_files", s.Presharded), zap.Int64("spread_files", s.Spread),
				zap.Float64("mb_per_second", s.BytesPerSec/1e6), zap.Float64("records_per_second", s.RecPerSec),
				zap.Duration("elapsed", s.Elapsed.Round(time.Millisecond)))
		}
	}
}

// dbMetrics are the load metrics labelled by db: one series per db (and
// per result for the loads), deleted when the db leaves the source, so
// their number follows the dbs served. The unlabelled totals beside them
// (spangle_storaged_version_loads_total and the rest) stay for
// dashboards that sum over a node.
type dbMetrics struct {
	loads    *prometheus.CounterVec
	records  *prometheus.CounterVec
	bytes    *prometheus.CounterVec
	duration *prometheus.GaugeVec
}

func newDBMetrics(reg prometheus.Registerer) *dbMetrics {
	m := &dbMetrics{
		loads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "spangle_storaged_db_version_loads_total",
			Help: "Versions of the db made servable, by how: loaded from the source, reused from the local store, or error.",
		}, []string{"db", "result"}),
		records: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "spangle_storaged_db_records_loaded_total",
			Help: "Records of the db read from source files.",
		}, []string{"db"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "spangle_storaged_db_bytes_loaded_total",
			Help: "Bytes of the db's source files read by loads.",
		}, []string{"db"}),
		duration: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "spangle_storaged_db_last_load_duration_seconds",
			Help: "How long the db's last version built from the source took to load, without the wait for the cluster to decide the node's partitions.",
		}, []string{"db"}),
	}
	if reg != nil {
		reg.MustRegister(m.loads, m.records, m.bytes, m.duration)
	}
	return m
}

// loaded counts a finished load of db.
func (m *dbMetrics) loaded(db, how string, res loader.Result, took time.Duration) {
	m.loads.WithLabelValues(db, how).Inc()
	if how == "loaded" {
		m.records.WithLabelValues(db).Add(float64(res.Records))
		m.bytes.WithLabelValues(db).Add(float64(res.Bytes))
		m.duration.WithLabelValues(db).Set(took.Seconds())
	}
}

// forget drops db's series: it left the source.
func (m *dbMetrics) forget(db string) {
	for _, v := range []*prometheus.MetricVec{m.loads.MetricVec, m.records.MetricVec, m.bytes.MetricVec, m.duration.MetricVec} {
		v.DeletePartialMatch(prometheus.Labels{"db": db})
	}
}
