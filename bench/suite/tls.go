package suite

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"spangle/bench/dataset"
	"spangle/bench/report"
	"spangle/shared/certgen"
	"spangle/shared/gcpace"
	"spangle/shared/tlsconfig"
)

// Targets of issue 27: what mutual TLS may cost.
const (
	tlsRatioTarget = 0.8 // throughput over TLS / plaintext
	tlsP99Target   = 1.2 // p99 at half load over TLS / plaintext at that rate
)

// tlsSection measures what mutual TLS costs, side by side with the same
// processes in plaintext: storaged GET over TLS (keep-alive) against
// storaged in plaintext, and routerd (uncached, plaintext to its apps)
// asking storaged over TLS against routerd asking it in plaintext.
func (b *bench) tlsSection(ctx context.Context, ds *dataset.Dataset) {
	const metricS, metricR = "storaged GET over TLS", "routerd uncached GET, TLS to storaged"
	defer roomForGenerator()()
	files, client, err := b.writeTLS()
	if err != nil {
		b.failed(metricS, err)
		return
	}
	plain, _, err := b.startStoraged(ctx, "storaged-plain", ds.Root, b.storeDir())
	if err != nil {
		b.failed(metricS, err)
		return
	}
	defer plain.Stop()
	secure, err := b.launchStoraged("storaged-tls", ds.Root, b.storeDir(), "--config", files.storaged)
	if err != nil {
		b.failed(metricS, err)
		return
	}
	defer secure.Stop()
	secure.TLS = client
	if _, err := activeAt(ctx, secure); err != nil {
		b.failed(metricS, err)
		return
	}
	keys := randomKeys(ds.Options.Keys)
	fa, fp, err := b.compareRounds(ctx, contender{name: "storaged TLS", addr: secure.Addr, tls: client}, contender{name: "storaged plaintext", addr: plain.Addr}, keys, b.o.Rounds)
	if err != nil {
		b.failed(metricS, err)
	} else {
		b.tlsRows(metricS, "storaged plaintext", fa, fp)
	}

	rdPlain, err := b.startRouterd(ctx, "routerd-plain", plain, "0")
	if err != nil {
		b.failed(metricR, err)
		return
	}
	defer rdPlain.Stop()
	rdTLS, err := b.startRouterd(ctx, "routerd-tls", secure, "0", "--config", files.routerd)
	if err != nil {
		b.failed(metricR, err)
		return
	}
	defer rdTLS.Stop()
	fa, fp, err = b.compareRounds(ctx, contender{name: "routerd TLS", addr: rdTLS.Addr}, contender{name: "routerd plaintext", addr: rdPlain.Addr}, keys, b.o.Rounds)
	if err != nil {
		b.failed(metricR, err)
		return
	}
	b.tlsRows(metricR, "routerd with plaintext to storaged", fa, fp)
}

// generatorGCHeadroom is how far the load generator's heap may grow
// past its live size between collections during the TLS comparisons:
// more than a round allocates (at 50,000 requests a second over TLS,
// some 15 MB in 3 s).
const generatorGCHeadroom = 64 << 20

// roomForGenerator lets the generator's heap grow by
// generatorGCHeadroom between collections (gcpace.Percent) and returns
// the function that puts the collector back. Its collections are not
// the servers' latency, yet a mark phase takes one of a small machine's
// CPUs from its connections. Over TLS it allocates per record read
// (crypto/tls's reader, about 60 bytes a request) where in plaintext it
// allocates next to nothing, so at GOGC=100 on its few-MB heap it
// collected 2-5 times in a TLS round and 0-2 times in a plaintext one;
// with the room it does not in either (load.Run collects before each
// run's clock). Only this section: the load section's decode-only is
// timed in this process at the collector's defaults.
func roomForGenerator() (restore func()) {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	var live int64
	if s[0].Value.Kind() == metrics.KindUint64 {
		live = int64(s[0].Value.Uint64())
	}
	old := debug.SetGCPercent(gcpace.Percent(live, generatorGCHeadroom, gcpace.DefaultFloor))
	return func() { debug.SetGCPercent(old) }
}

// tlsRows are throughputRows with issue 27's targets: throughput at
// least tlsRatioTarget of plaintext's, p99 at half load at most
// tlsP99Target times plaintext's at the same rate, judged on the median
// of the open-loop rounds' paired ratios.
func (b *bench) tlsRows(metric, peer string, fa, fp figures) {
	b.throughputRows(metric, peer, fa, fp, tlsRatioTarget, 1e9)
	last := &b.rep.Rows[len(b.rep.Rows)-1] // the p99 row, judged as a ratio
	*last = p99RatioRow(report.NewRow(last.Metric, last.Unit, last.Value, last.Peer, last.PeerValue, last.Note,
		report.Target{Kind: report.RatioAtMost, Limit: tlsP99Target}), fa)
}

// p99RatioRow gives a p99 row the median of the open-loop rounds' paired
// ratios, and says so, with the ratio of the medians kept in the note and
// how often the load generator collected garbage in each side's rounds
// (its collections are in the latencies it measures).
func p99RatioRow(r report.Row, fa figures) report.Row {
	if fa.p99Ratio <= 0 {
		return r
	}
	r.Note = fmt.Sprintf("ratio is the median of %d open-loop rounds' ratios, each pair run back to back (ratio of the medians %.2fx); the load generator collected %d times in these rounds, %d in the peer's",
		fa.rounds, r.Ratio, fa.genGCs, fa.peerGenGCs)
	return r.WithRatio(fa.p99Ratio)
}

// tlsFiles are the config files of the TLS contenders.
type tlsFiles struct{ storaged, routerd string }

// writeTLS makes the run's certificates (spangle certs' code) and the
// [tls] config files of storaged (mutual TLS required) and routerd; it
// returns them and the load generator's client config.
func (b *bench) writeTLS() (tlsFiles, *tls.Config, error) {
	dir := filepath.Join(b.tmp, "certs")
	if err := certgen.WriteSet(dir, certgen.SetOptions{Names: []string{"127.0.0.1", "localhost"}}); err != nil {
		return tlsFiles{}, nil, err
	}
	p := func(name string) string { return filepath.Join(dir, name) }
	section := func(cert, key string) string {
		return fmt.Sprintf("[tls]\ncert_file = %q\nkey_file = %q\nca_file = %q\nclient_auth = \"require\"\n", p(cert), p(key), p(certgen.CAFile))
	}
	f := tlsFiles{storaged: p("storaged.toml"), routerd: p("routerd.toml")}
	if err := os.WriteFile(f.storaged, []byte(section(certgen.PeerFile, certgen.PeerKeyFile)), 0o644); err != nil {
		return tlsFiles{}, nil, fmt.Errorf("suite: %w", err)
	}
	if err := os.WriteFile(f.routerd, []byte(section(certgen.ClientFile, certgen.ClientKeyFile)), 0o644); err != nil {
		return tlsFiles{}, nil, fmt.Errorf("suite: %w", err)
	}
	client, err := tlsconfig.Static(tlsconfig.Settings{CertFile: p(certgen.ClientFile), KeyFile: p(certgen.ClientKeyFile), CAFile: p(certgen.CAFile)}, time.Now())
	if err != nil {
		return tlsFiles{}, nil, err
	}
	return f, client, nil
}
