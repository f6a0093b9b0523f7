package suite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"spangle/bench/dataset"
	"spangle/bench/load"
	"spangle/bench/proc"
	"spangle/bench/report"
	"spangle/bench/stats"
)

// Targets of issues 2 and 4 for serving.
const (
	storagedRatioTarget = 0.8  // of the trivial server
	routerdRatioTarget  = 1.5  // of httputil.ReverseProxy (issue 31; issue 4 asked 0.9)
	routerdDirectTarget = 0.45 // of storaged asked directly (issue 31)
	routerdP99RPTarget  = 1.0  // p99 at half load, of httputil.ReverseProxy's (issue 31)
	cacheRatioTarget    = 0.8  // of the trivial server
	storagedP99Target   = 1.0  // ms at half load
	routerdP99Target    = 2.0  // ms at half load
	hotKeys             = 1000
)

// randomKeys requests random keys of the first n.
func randomKeys(n int) load.PathFunc {
	return func(dst []byte, rng *rand.Rand) []byte { return dataset.AppendPath(dst, rng.IntN(n)) }
}

// serveSection measures storaged against the trivial server, routerd
// without its cache against a ReverseProxy, and routerd's cache against
// the trivial server, then the processes' memory.
func (b *bench) serveSection(ctx context.Context, ds *dataset.Dataset) {
	st, _, err := b.startStoraged(ctx, "storaged", ds.Root, b.storeDir())
	if err != nil {
		b.failed("storaged GET", err)
		return
	}
	defer st.Stop()
	valueSize := ds.Options.ValueSize
	if valueSize == 0 {
		valueSize = 100
	}
	triv, err := b.startPeer(ctx, "trivial", "/", "serve-trivial", "--body-size", strconv.Itoa(valueSize))
	if err != nil {
		b.failed("storaged GET", err)
		return
	}
	defer triv.Stop()
	keys := randomKeys(ds.Options.Keys)

	if b.runs("storaged") {
		fa, fp, err := b.compare(ctx, contender{name: "storaged", addr: st.Addr}, contender{name: "trivial", addr: triv.Addr}, keys)
		if err != nil {
			b.failed("storaged GET", err)
		} else {
			b.throughputRows("storaged GET", "trivial net/http", fa, fp, storagedRatioTarget, storagedP99Target)
		}
		b.floorRow(ctx, triv, keys)
	}
	if b.runs("routerd") {
		// routerd without its cache vs a ReverseProxy, both in front of st.
		b.routerdSection(ctx, st, triv, keys)
	}

	if mem, err := st.Memory(); err != nil {
		b.failed("storaged RSS", err)
	} else {
		b.rep.Rows = append(b.rep.Rows,
			report.NewRow(fmt.Sprintf("storaged peak RSS, loaded %s keys and served all of the above", count(ds.Options.Keys)), "MB",
				proc.MB(mem.Peak), "", 0, fmt.Sprintf("VmHWM; RSS now %.0f MB", proc.MB(mem.Current)),
				report.Target{Kind: report.ValueBelow, Limit: rssTargetMB}))
	}
}

// routerdSection measures routerd uncached vs ReverseProxy, and cached vs
// the trivial server.
func (b *bench) routerdSection(ctx context.Context, st, triv *proc.Process, keys load.PathFunc) {
	const metricU, metricC = "routerd uncached GET", "routerd cache-hit GET"
	rd, err := b.startRouterd(ctx, "routerd-uncached", st, "0")
	if err != nil {
		b.failed(metricU, err)
		b.failed(metricC, fmt.Errorf("not run: routerd did not start"))
		return
	}
	defer rd.Stop()
	rp, err := b.startPeer(ctx, "reverseproxy", "/"+dataset.DB+"/"+string(dataset.AppendKey(nil, 0)),
		"serve-proxy", "--target", "http://"+st.Addr)
	if err != nil {
		b.failed(metricU, err)
	} else {
		fa, fp, err := b.compareRounds(ctx, contender{name: "routerd", addr: rd.Addr}, contender{name: "reverseproxy", addr: rp.Addr}, keys, b.o.Rounds)
		rp.Stop()
		if err != nil {
			b.failed(metricU, err)
		} else {
			b.throughputRows(metricU, "httputil.ReverseProxy", fa, fp, routerdRatioTarget, routerdP99Target)
			last := &b.rep.Rows[len(b.rep.Rows)-1]
			*last = p99RatioRow(report.NewRow(last.Metric, last.Unit, last.Value, last.Peer, last.PeerValue, last.Note,
				append(last.Targets, report.Target{Kind: report.RatioAtMost, Limit: routerdP99RPTarget})...), fa)
		}
	}
	// The hop's price: routerd against the storaged behind it, asked
	// directly (closed loop only).
	if fa, fp, err := b.compareRounds(ctx, contender{name: "routerd", addr: rd.Addr}, contender{name: "storaged", addr: st.Addr}, keys, 0); err != nil {
		b.failed(metricU+" vs storaged direct", err)
	} else {
		row := report.NewRow(metricU+" throughput, of storaged asked directly", "req/s", fa.rate, "storaged GET direct", fp.rate,
			fmt.Sprintf("closed loop, %d conns; ratio is the median of the rounds' ratios; spread %.0f%% / %.0f%%%s%s",
				b.o.Conns, 100*fa.spread, 100*fp.spread, fa.errNote(), fp.errNote()),
			report.Target{Kind: report.RatioAtLeast, Limit: routerdDirectTarget})
		b.rep.Rows = append(b.rep.Rows, row.WithRatio(fa.ratio))
	}
	b.memRow("routerd peak RSS (cache off)", rd)

	rc, err := b.startRouterd(ctx, "routerd-cached", st, "")
	if err != nil {
		b.failed(metricC, err)
		return
	}
	defer rc.Stop()
	fa, fp, err := b.compare(ctx, contender{name: "routerd", addr: rc.Addr}, contender{name: "trivial", addr: triv.Addr}, randomKeys(hotKeys))
	if err != nil {
		b.failed(metricC, err)
		return
	}
	b.throughputRows(fmt.Sprintf("%s (%d hot keys)", metricC, hotKeys), "trivial net/http", fa, fp, cacheRatioTarget, routerdP99Target)
	// Say how many answers really came from the cache.
	hits, herr := Scrape(ctx, "http://"+rc.Addr+"/metrics", "spangle_routerd_cache_hits_total")
	misses, merr := Scrape(ctx, "http://"+rc.Addr+"/metrics", "spangle_routerd_cache_misses_total")
	if herr == nil && merr == nil {
		row := &b.rep.Rows[len(b.rep.Rows)-3]
		row.Note += fmt.Sprintf("; routerd cache: %.0f hits, %.0f misses", hits, misses)
	}
	b.memRow("routerd peak RSS (cache on, 64 MiB)", rc)
}

func (b *bench) memRow(metric string, p *proc.Process) {
	mem, err := p.Memory()
	if err != nil {
		b.failed(metric, err)
		return
	}
	b.rep.Rows = append(b.rep.Rows, report.NewRow(metric, "MB", proc.MB(mem.Peak), "", 0,
		fmt.Sprintf("VmHWM; RSS now %.0f MB", proc.MB(mem.Current))))
}

// throughputRows adds the rows of one comparison: throughput against the
// peer, then p50 and p99 at half load against the peer at the same rate.
func (b *bench) throughputRows(metric, peer string, fa, fp figures, ratio, p99 float64) {
	tput := report.NewRow(metric+" throughput", "req/s", fa.rate, peer, fp.rate,
		fmt.Sprintf("closed loop, %d conns; ratio is the median of the rounds' ratios (each pair run back to back); p50/p99 %.2f/%.2f ms vs %.2f/%.2f ms; spread %.0f%% / %.0f%%%s%s",
			b.o.Conns, fa.p50, fa.p99, fp.p50, fp.p99, 100*fa.spread, 100*fp.spread, fa.errNote(), fp.errNote()),
		report.Target{Kind: report.RatioAtLeast, Limit: ratio})
	if fa.ratio > 0 {
		tput = tput.WithRatio(fa.ratio)
	}
	b.rep.Rows = append(b.rep.Rows, tput,
		report.NewRow(metric+" p50 at half load", "ms", fa.op50, peer+" at the same rate", fp.op50,
			fmt.Sprintf("open loop, %.0f req/s offered, %.0f / %.0f achieved", fa.openRate, fa.openGot, fp.openGot)),
		report.NewRow(metric+" p99 at half load", "ms", fa.op99, peer+" at the same rate", fp.op99, "",
			report.Target{Kind: report.ValueBelow, Limit: p99}),
	)
}

// floorRate is the light load at which floorRow measures the trivial
// server: a tenth of what this machine serves or less.
const floorRate = 1000

// floorRow measures the trivial server's latency at floorRate: what this
// machine's scheduling alone adds to a request (both processes waking on
// shared cores, the hypervisor's pauses), below which no server's p99 at a
// higher load can be expected to go.
func (b *bench) floorRow(ctx context.Context, triv *proc.Process, path load.PathFunc) {
	rounds, d := 3, b.o.Round
	if b.o.Quick {
		rounds, d = 1, 2*time.Second
	}
	var p50s, p99s []float64
	for r := 0; r < rounds; r++ {
		res, err := load.Run(ctx, load.Options{Addr: triv.Addr, Path: path, Conns: b.o.Conns,
			Warmup: 200 * time.Millisecond, Duration: d, Rate: floorRate, Seed: uint64(200 + r)})
		if err != nil {
			b.failed("machine floor", err)
			return
		}
		p50s = append(p50s, stats.Millis(stats.Percentile(res.Latencies, 0.5)))
		p99s = append(p99s, stats.Millis(stats.Percentile(res.Latencies, 0.99)))
	}
	b.rep.Rows = append(b.rep.Rows, report.NewRow(
		fmt.Sprintf("trivial net/http p99 at %d req/s (this machine's floor)", floorRate), "ms", stats.Median(p99s), "", 0,
		fmt.Sprintf("open loop, %d rounds, p50 %.3f ms: the latency scheduling alone adds here; no p99 at a higher load goes below it", rounds, stats.Median(p50s))))
}

// startPeer runs this executable as a peer server and waits until ready
// answers 200.
func (b *bench) startPeer(ctx context.Context, name, ready string, args ...string) (*proc.Process, error) {
	addr, err := proc.FreeAddr()
	if err != nil {
		return nil, err
	}
	argv := append([]string{b.o.Self}, args...)
	argv = append(argv, "--bind", addr)
	p, err := proc.Start(name, addr, b.logs, argv...)
	if err != nil {
		return nil, err
	}
	if _, err := p.WaitFor(ctx, "http://"+addr+ready, 10*time.Millisecond, time.Minute, status200); err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

// startRouterd runs routerd in front of st, with cacheSize ("" for the
// default), and waits until it answers a key.
func (b *bench) startRouterd(ctx context.Context, name string, st *proc.Process, cacheSize string, extra ...string) (*proc.Process, error) {
	addr, err := proc.FreeAddr()
	if err != nil {
		return nil, err
	}
	argv := []string{b.o.Routerd, "--bind", addr, "--storaged", st.Scheme() + "://" + st.Addr, "--log-level", "warn"}
	if cacheSize != "" {
		argv = append(argv, "--cache-size", cacheSize)
	}
	argv = append(argv, extra...)
	p, err := proc.Start(name, addr, b.logs, argv...)
	if err != nil {
		return nil, err
	}
	url := "http://" + addr + "/" + dataset.DB + "/" + string(dataset.AppendKey(nil, 0))
	if _, err := p.WaitFor(ctx, url, 20*time.Millisecond, time.Minute, status200); err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

func status200(status int, _ []byte) (bool, error) { return status == 200, nil }

// ErrNoMetric: the page has no sample of the metric (a counter with
// labels has none until it first counts).
var ErrNoMetric = errors.New("no sample of")

// Scrape reads a counter or gauge from a Prometheus text page: the sum
// of its samples, whatever their labels.
func Scrape(ctx context.Context, url, name string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, fmt.Errorf("suite: %w", err)
	}
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("suite: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return 0, fmt.Errorf("suite: %w", err)
	}
	sum, seen := 0.0, false
	for _, line := range strings.Split(string(body), "\n") {
		v, ok := strings.CutPrefix(line, name+" ")
		if !ok && strings.HasPrefix(line, name+"{") {
			v, ok = line[strings.LastIndexByte(line, ' ')+1:], true
		}
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return 0, fmt.Errorf("suite: %s: %w", name, err)
		}
		sum, seen = sum+f, true
	}
	if !seen {
		return 0, fmt.Errorf("suite: %w %s at %s", ErrNoMetric, name, url)
	}
	return sum, nil
}
