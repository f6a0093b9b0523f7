package versions

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"spangle/storaged/table"
)

// A partition of the local store can rot after it was built and synced:
// bit rot, a bad disk. Every block's checksum is checked whenever it is
// read from disk, so a lookup that reads a bad block finds it (Version.Get
// answers ErrPartitionCorrupt), and so does the scrub of a version reused
// after a restart (scrub.go). Either reports the partition here, once;
// the manager marks it bad and rebuilds it in the background, from a peer
// in cluster mode (Hooks.CopyPartition) else from the source, while the
// version goes on serving: its other partitions, and the bad partition's
// other blocks. The rebuilt copy is written beside the bad one, opened,
// and swapped in with one snapshot swap (Version.withPartition), as a
// partition added by re-replication is: the request path takes no lock.
// The bad copy is closed and deleted once the requests that may still
// read it have had dropGrace to finish.

// Defaults of RepairOptions.
const (
	// DefaultRepairRetry is the first wait before a failed rebuild is
	// tried again; it doubles up to maxRepairRetry.
	DefaultRepairRetry = time.Second
	maxRepairRetry     = time.Minute
)

// Who found a corrupt partition, in logs and metrics.
const (
	foundByLookup = "lookup"
	foundByScrub  = "scrub"
)

// reportQueue bounds the reports waiting for the manager; a lookup never
// waits for room (Version.corruptBlock), a later one reports again.
const reportQueue = 64

// errStale: the partition being rebuilt is no longer the one served (its
// version or the partition went, or it was replaced).
var errStale = errors.New("versions: partition no longer served")

// RepairOptions tunes how the node checks and mends its local store.
type RepairOptions struct {
	// ScrubRate bounds, in bytes per second over the node, how fast the
	// versions reused from the local store after a restart are read back
	// and checked. 0 turns the scrub off: a bad block is then found only
	// when a lookup reads it.
	ScrubRate float64
	// Retry is the first wait before a failed rebuild is tried again;
	// default DefaultRepairRetry.
	Retry time.Duration
}

// corruptReport says that a lookup or the scrub found a bad block in
// partition p of db/version, while part was serving it.
type corruptReport struct {
	db, version string
	p           int
	part        *table.Partition
	err         error
	by          string
}

// badPartition is a partition found corrupt and not yet replaced.
type badPartition struct {
	part   *table.Partition // the bad copy, serving until replaced
	by     string
	reason string // what was found, then why a rebuild failed
}

// repairs is the manager's part that mends the local store.
type repairs struct {
	opts    RepairOptions
	reports chan corruptReport
	pace    *pacer // nil: no scrub
	metrics repairMetrics
	// bad lists the corrupt partitions of each servable version. Guarded
	// by Manager.mu.
	bad map[*vstate]map[int]*badPartition
}

func newRepairs(opts RepairOptions, reg prometheus.Registerer) *repairs {
	if opts.Retry <= 0 {
		opts.Retry = DefaultRepairRetry
	}
	r := &repairs{opts: opts, reports: make(chan corruptReport, reportQueue),
		bad: map[*vstate]map[int]*badPartition{}, metrics: newRepairMetrics(reg)}
	if opts.ScrubRate > 0 {
		r.pace = newPacer(opts.ScrubRate)
	}
	return r
}

// runRepairs starts a rebuild for each corrupt partition reported, until
// ctx ends.
func (m *Manager) runRepairs(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case r := <-m.rep.reports:
			m.startRepair(ctx, r)
		}
	}
}

// startRepair marks the reported partition bad and rebuilds it in the
// background, unless the report is stale or a rebuild is under way.
func (m *Manager) startRepair(ctx context.Context, r corruptReport) {
	m.mu.Lock()
	defer m.mu.Unlock()
	vs := m.servableLocked(r.db, r.version)
	if vs == nil || r.p >= len(vs.v.parts) || vs.v.parts[r.p] != r.part || m.rep.bad[vs][r.p] != nil {
		return
	}
	if m.rep.bad[vs] == nil {
		m.rep.bad[vs] = map[int]*badPartition{}
	}
	b := &badPartition{part: r.part, by: r.by, reason: r.err.Error()}
	m.rep.bad[vs][r.p] = b
	m.rep.metrics.corrupt.WithLabelValues(r.by).Inc()
	m.rep.metrics.repairing.Inc()
	m.log.Error("corrupt block in the local store; rebuilding the partition while the rest serves",
		zap.String("db", r.db), zap.String("version", r.version), zap.Int("partition", r.p),
		zap.String("found_by", r.by), zap.Error(r.err))
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		m.repair(ctx, r.db, vs, r.p, b)
	}()
}

// repair rebuilds a bad partition until it is replaced, its version or
// partition is no longer served, or ctx ends.
func (m *Manager) repair(ctx context.Context, db string, vs *vstate, p int, b *badPartition) {
	wait := m.rep.opts.Retry
	for {
		from, err := m.rebuild(ctx, db, vs, p, b)
		if err == nil {
			m.rep.metrics.repairs.WithLabelValues(from).Inc()
			m.log.Info("corrupt partition rebuilt and swapped in", zap.String("db", db), zap.String("version", vs.name),
				zap.Int("partition", p), zap.String("from", from))
			return
		}
		if errors.Is(err, errStale) || ctx.Err() != nil {
			m.forgetBad(vs, p, b)
			return
		}
		m.rep.metrics.repairs.WithLabelValues("error").Inc()
		m.log.Error("rebuilding a corrupt partition failed; trying again", zap.String("db", db), zap.String("version", vs.name),
			zap.Int("partition", p), zap.Duration("in", wait), zap.Error(err))
		m.mu.Lock()
		b.reason = "rebuild failed: " + err.Error()
		m.mu.Unlock()
		if sleepCtx(ctx, wait) != nil {
			m.forgetBad(vs, p, b)
			return
		}
		wait = min(2*wait, maxRepairRetry)
	}
}

// rebuild writes a new copy of partition p beside the bad one, moves it
// in its place, and swaps it into the served version.
func (m *Manager) rebuild(ctx context.Context, db string, vs *vstate, p int, b *badPartition) (string, error) {
	m.mu.Lock()
	live := m.servableLocked(db, vs.name) == vs && vs.v.parts[p] == b.part
	files := vs.files
	m.mu.Unlock()
	if !live {
		return "", errStale
	}
	dir := m.opts.Store.PartitionDir(db, vs.name, p)
	fresh, old := dir+".new", dir+".bad"
	var fill func(ctx context.Context, dir string) error
	if cp := m.opts.Hooks.CopyPartition; cp != nil {
		fill = func(ctx context.Context, dir string) error { return cp(ctx, db, vs.name, p, dir) }
	}
	from, err := m.fillPartition(ctx, db, vs.name, files, p, fresh, fill)
	if err != nil {
		return "", err
	}
	// The bad copy's files stay open (and readable) under their new
	// name until it is closed. A crash between the renames leaves no
	// partition dir: the version does not open after a restart and is
	// loaded again.
	if err := os.RemoveAll(old); err != nil {
		return "", fmt.Errorf("versions: %w", err)
	}
	if err := os.Rename(dir, old); err != nil {
		os.RemoveAll(fresh)
		return "", fmt.Errorf("versions: setting the corrupt copy aside: %w", err)
	}
	if err := os.Rename(fresh, dir); err != nil {
		os.Rename(old, dir)
		return "", fmt.Errorf("versions: putting the rebuilt copy in place: %w", err)
	}
	part, err := table.OpenPartition(dir, m.opts.Cache)
	if err != nil {
		return "", fmt.Errorf("versions: opening the rebuilt partition: %w", err)
	}

	m.mu.Lock()
	if m.servableLocked(db, vs.name) != vs || vs.v.parts[p] != b.part {
		m.mu.Unlock()
		part.Close()
		return "", errStale
	}
	vs.v = vs.v.withPartition(p, part)
	m.forgetBadLocked(vs, p, b)
	m.publishLocked()
	m.mu.Unlock()

	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		sleepCtx(ctx, dropGrace) // requests that acquired the old copy finish
		b.part.Close()
		os.RemoveAll(old)
	}()
	return from, nil
}

func (m *Manager) forgetBad(vs *vstate, p int, b *badPartition) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.forgetBadLocked(vs, p, b)
}

// forgetBadLocked removes b from the bad partitions, if it is there.
func (m *Manager) forgetBadLocked(vs *vstate, p int, b *badPartition) {
	bad := m.rep.bad[vs]
	if bad[p] != b {
		return
	}
	delete(bad, p)
	if len(bad) == 0 {
		delete(m.rep.bad, vs)
	}
	m.rep.metrics.repairing.Dec()
}

// corruptLocked returns the bad partitions of vs, ascending, and a reason
// saying what was found; nil and "" when there are none.
func (m *Manager) corruptLocked(vs *vstate) ([]int, string) {
	bad := m.rep.bad[vs]
	if len(bad) == 0 {
		return nil, ""
	}
	ps := make([]int, 0, len(bad))
	for p := range bad {
		ps = append(ps, p)
	}
	sort.Ints(ps)
	var why []string
	for _, p := range ps {
		why = append(why, "partition "+strconv.Itoa(p)+" corrupt (found by "+bad[p].by+"): "+bad[p].reason)
	}
	return slices.Clip(ps), strings.Join(why, "; ") + "; rebuilding"
}

// repairMetrics are the series of the local store's checks and mends.
type repairMetrics struct {
	corrupt    *prometheus.CounterVec
	repairing  prometheus.Gauge
	repairs    *prometheus.CounterVec
	scrubBytes prometheus.Counter
}

func newRepairMetrics(reg prometheus.Registerer) repairMetrics {
	m := repairMetrics{
		corrupt: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "spangle_storaged_partitions_corrupt_total",
			Help: "Partitions of the local store found with a corrupt block, by what found it: a lookup or the scrub.",
		}, []string{"found_by"}),
		repairing: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "spangle_storaged_partitions_repairing",
			Help: "Partitions found corrupt and not yet replaced by a rebuilt copy.",
		}),
		repairs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "spangle_storaged_partition_repairs_total",
			Help: "Rebuilds of corrupt partitions, by where the new copy came from (peer, source) or error.",
		}, []string{"result"}),
		scrubBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "spangle_storaged_scrub_bytes_total",
			Help: "Bytes of the local store read back and checked by the scrub.",
		}),
	}
	// Every series shows from the start, zero until something happens.
	for _, by := range []string{foundByLookup, foundByScrub} {
		m.corrupt.WithLabelValues(by)
	}
	for _, r := range []string{fromPeer, fromSource, "error"} {
		m.repairs.WithLabelValues(r)
	}
	if reg != nil {
		reg.MustRegister(m.corrupt, m.repairing, m.repairs, m.scrubBytes)
	}
	return m
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
