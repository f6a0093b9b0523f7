package suite

import (
	"context"
	"crypto/tls"
	"fmt"
	"time"

	"go.uber.org/zap"

	"spangle/bench/load"
	"spangle/bench/stats"
)

// contender is a server under load.
type contender struct {
	name string
	addr string      // host:port
	tls  *tls.Config // nil: plaintext
}

// figures are what a comparison measured of one contender: medians over
// rounds.
type figures struct {
	rate     float64 // closed loop, req/s
	p50, p99 float64 // closed loop, ms
	spread   float64 // of the closed-loop rates
	ratio    float64 // median of the rounds' a/peer throughput ratios (a's figures only)
	// p99Ratio is the median of the open-loop rounds' a/peer p99 ratios,
	// each pair run back to back (a's figures only): steadier on a shared
	// machine than the ratio of the medians, as ratio is for throughput.
	p99Ratio float64
	rounds   int     // open-loop rounds per contender
	openRate float64 // offered open-loop rate, req/s
	openGot  float64 // achieved open-loop rate, req/s
	op50     float64 // open loop, ms
	op99     float64
	// genGCs and peerGenGCs are the load generator's own collections
	// in a's open rounds and in the peer's (a's figures only).
	genGCs, peerGenGCs uint64
	errors             int64
	firstErr           string
}

func (f figures) errNote() string {
	if f.errors == 0 {
		return ""
	}
	return fmt.Sprintf("; %d errors (%s)", f.errors, f.firstErr)
}

// compare loads a and peer alternately with the same generator and key
// choice: closed-loop rounds for their maximum throughput, then three
// open-loop rounds at half of a's median maximum for both, for latency.
func (b *bench) compare(ctx context.Context, a, peer contender, path load.PathFunc) (fa, fp figures, err error) {
	return b.compareRounds(ctx, a, peer, path, 3)
}

// compareRounds is compare with openRounds open-loop rounds per
// contender (quick mode: one): a row that judges a p99 ratio needs more
// than three, since one stall of this shared machine in a round moves
// that round's p99.
func (b *bench) compareRounds(ctx context.Context, a, peer contender, path load.PathFunc, openRounds int) (fa, fp figures, err error) {
	warm := time.Second
	openDur := b.o.Round
	if b.o.Quick {
		warm, openDur = 500*time.Millisecond, 2*time.Second
		openRounds = min(openRounds, 1)
	}
	run := func(c contender, rate float64, d, warmup time.Duration, seed uint64) (load.Result, error) {
		return load.Run(ctx, load.Options{Addr: c.addr, Path: path, Conns: b.o.Conns, Warmup: warmup,
			Duration: d, Rate: rate, Seed: seed, TLS: c.tls})
	}
	// Warm both: connections, caches, the page cache under the tables.
	for _, c := range []contender{a, peer} {
		if _, err := run(c, 0, warm, 0, 99); err != nil {
			return fa, fp, err
		}
	}
	type acc struct {
		rates, p50s, p99s []float64
		errors            int64
		firstErr          string
	}
	var ra, rp acc
	add := func(x *acc, res load.Result) {
		x.rates = append(x.rates, res.Rate())
		x.p50s = append(x.p50s, stats.Millis(stats.Percentile(res.Latencies, 0.5)))
		x.p99s = append(x.p99s, stats.Millis(stats.Percentile(res.Latencies, 0.99)))
		x.errors += res.Errors
		if x.firstErr == "" {
			x.firstErr = res.FirstError
		}
	}
	order := func(r int) [2]contender {
		if r%2 == 0 {
			return [2]contender{a, peer}
		}
		return [2]contender{peer, a}
	}
	var ratios []float64
	for r := 0; r < b.o.Rounds; r++ {
		var ar, pr float64
		for _, c := range order(r) {
			res, err := run(c, 0, b.o.Round, 200*time.Millisecond, uint64(r))
			if err != nil {
				return fa, fp, err
			}
			b.log.Info("closed round", zap.String("server", c.name), zap.Int("round", r), zap.Float64("req/s", res.Rate()),
				zap.Duration("p50", stats.Percentile(res.Latencies, 0.5)), zap.Duration("p99", stats.Percentile(res.Latencies, 0.99)),
				zap.Int64("errors", res.Errors))
			if c == a {
				add(&ra, res)
				ar = res.Rate()
			} else {
				add(&rp, res)
				pr = res.Rate()
			}
		}
		if pr > 0 {
			ratios = append(ratios, ar/pr)
		}
	}
	fa = figures{rate: stats.Median(ra.rates), p50: stats.Median(ra.p50s), p99: stats.Median(ra.p99s),
		spread: stats.Spread(ra.rates), errors: ra.errors, firstErr: ra.firstErr, ratio: stats.Median(ratios)}
	fp = figures{rate: stats.Median(rp.rates), p50: stats.Median(rp.p50s), p99: stats.Median(rp.p99s),
		spread: stats.Spread(rp.rates), errors: rp.errors, firstErr: rp.firstErr}
	if fa.rate <= 0 {
		return fa, fp, fmt.Errorf("suite: %s answered nothing (%s)", a.name, ra.firstErr)
	}
	if openRounds <= 0 {
		return fa, fp, nil // closed loop only
	}
	half := fa.rate / 2
	var oa, op acc
	var gotA, gotP, p99Ratios []float64
	var gcA, gcP uint64
	for r := 0; r < openRounds; r++ {
		var a99, p99 float64
		for _, c := range order(r) {
			res, err := run(c, half, openDur, 200*time.Millisecond, uint64(100+r))
			if err != nil {
				return fa, fp, err
			}
			b.log.Info("open round", zap.String("server", c.name), zap.Int("round", r), zap.Float64("offered", half),
				zap.Float64("req/s", res.Rate()), zap.Duration("p50", stats.Percentile(res.Latencies, 0.5)),
				zap.Duration("p99", stats.Percentile(res.Latencies, 0.99)), zap.Int64("errors", res.Errors),
				zap.Uint64("generator GCs", res.Collections))
			if c == a {
				gcA += res.Collections
				add(&oa, res)
				gotA = append(gotA, res.Rate())
				a99 = oa.p99s[len(oa.p99s)-1]
			} else {
				gcP += res.Collections
				add(&op, res)
				gotP = append(gotP, res.Rate())
				p99 = op.p99s[len(op.p99s)-1]
			}
		}
		if p99 > 0 {
			p99Ratios = append(p99Ratios, a99/p99)
		}
	}
	fa.p99Ratio, fa.rounds, fp.rounds = stats.Median(p99Ratios), openRounds, openRounds
	fa.genGCs, fa.peerGenGCs = gcA, gcP
	fa.openRate, fa.openGot, fa.op50, fa.op99 = half, stats.Median(gotA), stats.Median(oa.p50s), stats.Median(oa.p99s)
	fp.openRate, fp.openGot, fp.op50, fp.op99 = half, stats.Median(gotP), stats.Median(op.p50s), stats.Median(op.p99s)
	fa.errors += oa.errors
	fp.errors += op.errors
	if fa.firstErr == "" {
		fa.firstErr = oa.firstErr
	}
	if fp.firstErr == "" {
		fp.firstErr = op.firstErr
	}
	return fa, fp, nil
}
