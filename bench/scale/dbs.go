package scale

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"

	"spangle/bench/dataset"
	"spangle/bench/proc"
	"spangle/bench/suite"
	"spangle/shared/topo"
	"spangle/shared/wait"
	"spangle/shared/zktest"
)

// Shape of the dbs dimension's cluster.
const (
	clusterNodes = 3
	clusterName  = "scale"
	replication  = 2 // storaged's default
	dbPartitions = 8
	// converge is storaged's time_to_converge here: a fixed cost of every
	// start, shortened from the 10 s default so it does not hide the part
	// that grows with the dbs.
	converge = "2s"
	// window is how long the idle and the change measurements of
	// ZooKeeper's traffic each last, at least.
	window = 5 * time.Second
	// heapMetric is the Go collector's live heap figure.
	heapMetric = "go_memstats_heap_alloc_bytes"
	// partitionsMetric counts a storaged's partitions loaded, by where
	// they came from (label from: source or peer).
	partitionsMetric = "spangle_storaged_partitions_loaded_total"
	// probePartitions is how many small partitions createCost makes.
	probePartitions = 200
)

// DBsPoint is one size of the dbs dimension: DBs dbs of 8 partitions on
// three storaged, one ZooKeeper and routerd.
type DBsPoint struct {
	DBs        int `json:"dbs"`
	Partitions int `json:"partitions"`
	// ActiveS is from the processes' start until routerd serves version
	// 1 of every db (polled every 100 ms).
	ActiveS float64 `json:"active_s"`
	// HalfS is from the start until routerd serves version 1 of half
	// the dbs; StoragedCPUS the three storaged's CPU time (user and
	// system) from their start until every db was served: steadier than
	// the times on a shared machine.
	HalfS        float64 `json:"half_s,omitempty"`
	StoragedCPUS float64 `json:"storaged_cpu_s,omitempty"`
	// StoragedSysS is the system part of StoragedCPUS; StoragedBuilt and
	// StoragedCopied the partitions the three had built from the source
	// and copied from a peer by then (spangle_storaged_partitions_loaded_total):
	// whether more CPU is more work or dearer system calls.
	StoragedSysS   float64 `json:"storaged_sys_s,omitempty"`
	StoragedBuilt  int     `json:"storaged_built,omitempty"`
	StoragedCopied int     `json:"storaged_copied,omitempty"`
	// CreateUs is, measured just before the processes start, the CPU
	// time a created inode costs in a fresh directory beside the stores
	// (see createCost): what the filesystem charges storaged for each file
	// of a partition. On ext4 without a journal it grows for a minute or
	// more after many files were deleted on it, by any process.
	CreateUs float64 `json:"create_us,omitempty"`
	// SettledS is from the start until every partition has its
	// replication's replicas registered and ZooKeeper's znode and watch
	// counts stopped changing.
	SettledS float64 `json:"settled_s"`
	// ZK is mntr's totals once settled; Clients each process's
	// connection then (cumulated since it connected).
	ZK      zkTotals            `json:"zk"`
	Clients map[string]zkClient `json:"clients"`
	// Idle and Change are deltas over a window of nothing happening and
	// over the window starting with one db's new version.
	Idle   Delta `json:"idle"`
	Change Delta `json:"change"`
	// NewVersionS is from the new version's SIGHUP to the storaged nodes
	// until routerd serves it (polled every 10 ms), its load included.
	NewVersionS float64 `json:"new_version_s"`
	// CompleteToRouterdMs is from the version becoming complete in
	// ZooKeeper (the last partition's first replica znode created, by
	// its ctime) until routerd serves it: routerd's own delay.
	CompleteToRouterdMs float64 `json:"complete_to_routerd_ms"`
	// RouterdMB is routerd's VmRSS at the end, RouterdPeakMB its VmHWM;
	// StoragedMB the largest storaged's VmRSS.
	RouterdMB     float64 `json:"routerd_mb"`
	RouterdPeakMB float64 `json:"routerd_peak_mb"`
	StoragedMB    float64 `json:"storaged_mb"`
	// RouterdHeapMB and StoragedHeapMB (the largest) are the Go heap's
	// allocated bytes (go_memstats_heap_alloc_bytes): what of the RSS is
	// live objects rather than the collector's headroom or caches.
	RouterdHeapMB  float64 `json:"routerd_heap_mb"`
	StoragedHeapMB float64 `json:"storaged_heap_mb"`
	// StoragedFDs is the largest storaged's open files
	// (process_open_fds): tables and sockets, a limit to meet.
	StoragedFDs int `json:"storaged_fds"`
	// RenderMs is the median over three loads of routerd's status page
	// in headless Chromium, from navigation to the node table visible;
	// LoadEventMs the browser's own navigation-to-load-end; PageKB the
	// HTML's size.
	RenderMs    float64 `json:"render_ms"`
	LoadEventMs float64 `json:"load_event_ms"`
	PageKB      float64 `json:"page_kb"`
}

// Delta is what ZooKeeper did over a window.
type Delta struct {
	Seconds float64             `json:"seconds"`
	ZK      zkTotals            `json:"zk"`
	Clients map[string]zkClient `json:"clients"`
}

// dbName is the i-th db's name; the width keeps the names in order.
func dbName(i int) string { return fmt.Sprintf("db-%04d", i) }

// cluster is the dbs dimension's running processes.
type cluster struct {
	zk       *zktest.Server
	storaged []*proc.Process
	routerd  *proc.Process
}

// names maps each process's pid to its name.
func (c *cluster) names() map[int]string {
	m := map[int]string{c.routerd.Pid(): "routerd"}
	for i, s := range c.storaged {
		m[s.Pid()] = fmt.Sprintf("storaged-%d", i+1)
	}
	return m
}

func (c *cluster) stop() {
	for _, p := range append(slices.Clone(c.storaged), c.routerd) {
		if p != nil {
			p.Stop()
		}
	}
	c.zk.Stop()
}

// snapshot reads mntr and every process's connection.
func (c *cluster) snapshot(ctx context.Context) (zkTotals, map[string]zkClient, error) {
	t, err := mntr(c.zk)
	if err != nil {
		return t, nil, err
	}
	byPid, err := zkClients(ctx, c.zk)
	if err != nil {
		return t, nil, err
	}
	names := c.names()
	out := map[string]zkClient{}
	for pid, cl := range byPid {
		if name, ok := names[pid]; ok {
			out[name] = cl
		}
	}
	return t, out, nil
}

// delta is the change between two snapshots.
func delta(d time.Duration, t0, t1 zkTotals, c0, c1 map[string]zkClient) Delta {
	out := Delta{Seconds: d.Seconds(), ZK: t1.sub(t0), Clients: map[string]zkClient{}}
	for name, b := range c1 {
		out.Clients[name] = b.sub(c0[name])
	}
	return out
}

// dbsPoint runs a cluster of n dbs and measures it.
func (r *run) dbsPoint(ctx context.Context, n int) (DBsPoint, error) {
	p := DBsPoint{DBs: n, Partitions: n * dbPartitions}
	root, err := r.dir("dbs-src")
	if err != nil {
		return p, err
	}
	defer os.RemoveAll(root)
	dso := func(i int, version string) dataset.Options {
		return dataset.Options{DB: dbName(i), Version: version, Keys: r.o.DBKeys, Files: dbPartitions, ValueSize: r.o.DBValueSize}
	}
	for i := 0; i < n; i++ {
		if _, err := dataset.Write(ctx, root, dso(i, dataset.Version)); err != nil {
			return p, fmt.Errorf("scale: writing db %d: %w", i, err)
		}
	}
	probe, err := r.dir("create-probe")
	if err != nil {
		return p, err
	}
	if p.CreateUs, err = createCost(probe, probePartitions); err != nil {
		return p, err
	}
	zkDir, err := r.dir("zk")
	if err != nil {
		return p, err
	}
	zks, err := zktest.Run(zkDir)
	if err != nil {
		return p, err
	}
	c := &cluster{zk: zks}
	defer c.stop()

	t0 := time.Now()
	for i := 0; i < clusterNodes; i++ {
		store, err := r.dir("dbs-store")
		if err != nil {
			return p, err
		}
		st, err := r.start(fmt.Sprintf("storaged-dbs%d-%d", n, i+1), func(addr string) []string {
			return []string{r.o.Storaged, "--source", root, "--local-store", store, "--bind", addr, "--advertise", addr,
				"--zk", zks.Addr(), "--cluster", clusterName, "--time-to-converge", converge, "--refresh-period", "0",
				"--log-level", cmp.Or(r.o.DBsLogLevel, "warn")}
		})
		if err != nil {
			return p, err
		}
		c.storaged = append(c.storaged, st)
	}
	c.routerd, err = r.start(fmt.Sprintf("routerd-dbs%d", n), func(addr string) []string {
		return []string{r.o.Routerd, "--bind", addr, "--zk", zks.Addr(), "--cluster", clusterName, "--log-level", "warn"}
	})
	if err != nil {
		return p, err
	}
	half := func() { p.HalfS = time.Since(t0).Seconds() }
	if err := waitServed(ctx, c.routerd, "", n, dataset.Version, 100*time.Millisecond, half); err != nil {
		return p, err
	}
	p.ActiveS = time.Since(t0).Seconds()
	for _, st := range c.storaged {
		user, system, err := cpuSeconds(st.Pid())
		if err != nil {
			return p, err
		}
		p.StoragedCPUS += user + system
		p.StoragedSysS += system
		// A figure to explain the others: a node too busy to answer
		// leaves it out rather than fail the point.
		from, err := scrapeBy(ctx, "http://"+st.Addr+"/metrics", partitionsMetric, "from")
		if err != nil {
			r.log.Warn("partitions loaded", zap.String("storaged", st.Addr), zap.Error(err))
		}
		p.StoragedBuilt += int(from["source"])
		p.StoragedCopied += int(from["peer"])
	}
	r.log.Info("every db served", zap.Int("dbs", n), zap.Float64("s", p.ActiveS), zap.Float64("half_s", p.HalfS),
		zap.Float64("storaged_cpu_s", p.StoragedCPUS), zap.Float64("storaged_sys_s", p.StoragedSysS),
		zap.Int("built", p.StoragedBuilt), zap.Int("copied", p.StoragedCopied), zap.Float64("create_us", p.CreateUs))
	// routerd serves a version once each partition has one replica; the
	// second replicas register later. The idle window must start after.
	if err := waitReplicated(ctx, c.routerd, n, replication); err != nil {
		return p, err
	}
	if err := waitSteady(ctx, zks); err != nil {
		return p, err
	}
	p.SettledS = time.Since(t0).Seconds()
	r.log.Info("every partition replicated", zap.Int("dbs", n), zap.Float64("s", p.SettledS))

	if p.ZK, p.Clients, err = c.snapshot(ctx); err != nil {
		return p, err
	}
	// Idle: what the cluster costs ZooKeeper when nothing changes.
	i0 := time.Now()
	zt0, zc0, err := c.snapshot(ctx)
	if err != nil {
		return p, err
	}
	if err := wait.Sleep(ctx, window); err != nil {
		return p, fmt.Errorf("scale: %w", err)
	}
	zt1, zc1, err := c.snapshot(ctx)
	if err != nil {
		return p, err
	}
	p.Idle = delta(time.Since(i0), zt0, zt1, zc0, zc1)

	// Change: a new version of one db.
	staging, err := r.dir("dbs-staging")
	if err != nil {
		return p, err
	}
	const v2 = "2"
	if _, err := dataset.Write(ctx, staging, dso(0, v2)); err != nil {
		return p, err
	}
	if err := os.Rename(filepath.Join(staging, dbName(0), v2), filepath.Join(root, dbName(0), v2)); err != nil {
		return p, fmt.Errorf("scale: %w", err)
	}
	c0 := time.Now()
	zt0, zc0, err = c.snapshot(ctx)
	if err != nil {
		return p, err
	}
	for _, st := range c.storaged {
		if err := st.Signal(syscall.SIGHUP); err != nil {
			return p, err
		}
	}
	if err := waitServed(ctx, c.routerd, dbName(0), 1, v2, 10*time.Millisecond, nil); err != nil {
		return p, err
	}
	served := time.Now()
	p.NewVersionS = served.Sub(c0).Seconds()
	if err := wait.Sleep(ctx, time.Until(c0.Add(window))); err != nil {
		return p, fmt.Errorf("scale: %w", err)
	}
	zt1, zc1, err = c.snapshot(ctx)
	if err != nil {
		return p, err
	}
	p.Change = delta(time.Since(c0), zt0, zt1, zc0, zc1)
	if reg, err := completeAt(zks.Addr(), dbName(0), v2); err != nil {
		r.log.Warn("partition znodes' ctime", zap.Error(err))
	} else {
		p.CompleteToRouterdMs = float64(served.Sub(reg)) / float64(time.Millisecond)
	}
	r.log.Info("new version served", zap.Int("dbs", n), zap.Float64("s", p.NewVersionS),
		zap.Float64("complete_to_routerd_ms", p.CompleteToRouterdMs))

	if mem, err := c.routerd.Memory(); err == nil {
		p.RouterdMB, p.RouterdPeakMB = proc.MB(mem.Current), proc.MB(mem.Peak)
	}
	if heap, err := suite.Scrape(ctx, "http://"+c.routerd.Addr+"/metrics", heapMetric); err == nil {
		p.RouterdHeapMB = heap / (1 << 20)
	}
	for _, st := range c.storaged {
		if mem, err := st.Memory(); err == nil {
			p.StoragedMB = max(p.StoragedMB, proc.MB(mem.Current))
		}
		if heap, err := suite.Scrape(ctx, "http://"+st.Addr+"/metrics", heapMetric); err == nil {
			p.StoragedHeapMB = max(p.StoragedHeapMB, heap/(1<<20))
		}
		if fds, err := suite.Scrape(ctx, "http://"+st.Addr+"/metrics", "process_open_fds"); err == nil {
			p.StoragedFDs = max(p.StoragedFDs, int(fds))
		}
	}
	if err := r.render(ctx, "http://"+c.routerd.Addr+"/", &p); err != nil {
		return p, err
	}
	r.log.Info("status page", zap.Int("dbs", n), zap.Float64("render_ms", p.RenderMs), zap.Float64("kb", p.PageKB))
	return p, nil
}

// waitServed polls routerd's status (of db, or of all when db is "")
// until it lists n dbs and serves version of each. half, when not nil, is
// called once when it serves version of half of n.
func waitServed(ctx context.Context, rd *proc.Process, db string, n int, version string, every time.Duration, half func()) error {
	var st struct {
		DBs map[string]struct {
			Served string `json:"served_version"`
		} `json:"dbs"`
	}
	_, err := rd.WaitFor(ctx, "http://"+rd.Addr+"/"+db, every, 30*time.Minute, func(status int, body []byte) (bool, error) {
		st.DBs = nil
		if status != 200 || json.Unmarshal(body, &st) != nil {
			return false, nil
		}
		served := 0
		for _, d := range st.DBs {
			if d.Served == version {
				served++
			}
		}
		if half != nil && 2*served >= n {
			half()
			half = nil
		}
		return len(st.DBs) >= n && served == len(st.DBs), nil
	})
	return err
}

// waitReplicated polls routerd's status until version 1 of each of n dbs
// has at least copies replicas of every partition.
func waitReplicated(ctx context.Context, rd *proc.Process, n, copies int) error {
	var st struct {
		DBs map[string]struct {
			Versions map[string]struct {
				Replicas [][]string `json:"replicas"`
			} `json:"versions"`
		} `json:"dbs"`
	}
	_, err := rd.WaitFor(ctx, "http://"+rd.Addr+"/", 250*time.Millisecond, 30*time.Minute, func(status int, body []byte) (bool, error) {
		st.DBs = nil
		if status != 200 || json.Unmarshal(body, &st) != nil || len(st.DBs) < n {
			return false, nil
		}
		for _, d := range st.DBs {
			reps := d.Versions[dataset.Version].Replicas
			if len(reps) != dbPartitions {
				return false, nil
			}
			for _, r := range reps {
				if len(r) < copies {
					return false, nil
				}
			}
		}
		return true, nil
	})
	return err
}

// waitSteady waits until mntr's znode, ephemeral and watch counts are
// the same over a second.
func waitSteady(ctx context.Context, zks *zktest.Server) error {
	prev, err := mntr(zks)
	if err != nil {
		return err
	}
	for deadline := time.Now().Add(10 * time.Minute); time.Now().Before(deadline); {
		if err := wait.Sleep(ctx, time.Second); err != nil {
			return fmt.Errorf("scale: %w", err)
		}
		cur, err := mntr(zks)
		if err != nil {
			return err
		}
		if cur.Znodes == prev.Znodes && cur.Ephemerals == prev.Ephemerals && cur.Watches == prev.Watches {
			return nil
		}
		prev = cur
	}
	return fmt.Errorf("scale: ZooKeeper's znode and watch counts never settled")
}

// completeAt is when db's version became complete for a router with
// min_replication 1 (routerd's default): when the last of its partitions
// got its first replica's znode, by the znodes' ctime (ZooKeeper's
// clock, this machine's). Later replicas do not delay routerd's switch.
func completeAt(addr, db, version string) (time.Time, error) {
	conn, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(silent{}))
	if err != nil {
		return time.Time{}, fmt.Errorf("scale: %w", err)
	}
	defer conn.Close()
	dir := topo.Paths{Cluster: clusterName}.Version(db, version)
	kids, _, err := conn.Children(dir)
	if err != nil {
		return time.Time{}, fmt.Errorf("scale: %s: %w", dir, err)
	}
	first := map[string]int64{} // partition -> its first replica's ctime
	for _, k := range kids {
		_, st, err := conn.Get(dir + "/" + k)
		if err != nil {
			return time.Time{}, fmt.Errorf("scale: %s/%s: %w", dir, k, err)
		}
		part, _, _ := strings.Cut(k, "@")
		if t, ok := first[part]; !ok || st.Ctime < t {
			first[part] = st.Ctime
		}
	}
	if len(first) != dbPartitions {
		return time.Time{}, fmt.Errorf("scale: %d partitions registered under %s, want %d", len(first), dir, dbPartitions)
	}
	var last int64
	for _, t := range first {
		last = max(last, t)
	}
	return time.UnixMilli(last), nil
}

type silent struct{}

func (silent) Printf(string, ...any) {}

// pageSize fetches url as a browser would and returns the HTML's size.
func pageSize(ctx context.Context, url string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, fmt.Errorf("scale: %w", err)
	}
	req.Header.Set("Accept", "text/html")
	client := &http.Client{Timeout: time.Minute}
	resp, err := client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("scale: %w", err)
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		return 0, fmt.Errorf("scale: %w", err)
	}
	return int(n), nil
}

// cpuSeconds is a process's user and system CPU time so far, from
// /proc/<pid>/stat (in clock ticks of 1/100 s, Linux's USER_HZ).
func cpuSeconds(pid int) (user, system float64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("scale: %w", err)
	}
	// The command name (field 2) may hold spaces: fields count from
	// after its closing parenthesis, where field 3 is the state.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("scale: /proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, 0, fmt.Errorf("scale: /proc/%d/stat: %d fields", pid, len(f))
	}
	utime, err1 := strconv.ParseUint(f[11], 10, 64)
	stime, err2 := strconv.ParseUint(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, 0, fmt.Errorf("scale: /proc/%d/stat: %w", pid, err)
	}
	return float64(utime) / 100, float64(stime) / 100, nil
}
