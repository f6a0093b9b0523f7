package suite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"spangle/bench/dataset"
	"spangle/bench/load"
	"spangle/bench/proc"
	"spangle/bench/report"
	"spangle/bench/stats"
)

// The many-batches row of issue 31: manyClients connections each send
// manyBatchKeys-key batches in a closed loop through routerd with its
// defaults. Every key must be answered and no breaker may open on the
// node, which answers throughout: it is busy, not broken.
const (
	manyClients   = 30
	manyBatchKeys = 300
)

// failedOpen is how the failed keys of a batch answer begin; the
// answer's last object.
var failedOpen = []byte(`"failed":{`)

// failedKeys counts the entries of an answer's "failed" object: keys
// are percent-escaped and reasons carry no `":"`, so each entry holds
// one.
func failedKeys(body []byte) int {
	i := bytes.LastIndex(body, failedOpen)
	if i < 0 {
		return 0
	}
	return bytes.Count(body[i+len(failedOpen):], []byte(`":"`))
}

// manyBatches loads rd with manyClients concurrent batches of
// manyBatchKeys keys of the first n for d and adds its row.
func (b *bench) manyBatches(ctx context.Context, rd *proc.Process, n int, d time.Duration) {
	metric := fmt.Sprintf("routerd %d clients x %d-key batches", manyClients, manyBatchKeys)
	var failed, withFailed atomic.Int64
	body := func(dst []byte, rng *rand.Rand) []byte {
		for i := 0; i < manyBatchKeys; i++ {
			dst = append(dataset.AppendKey(dst, rng.IntN(n)), '\n')
		}
		return dst
	}
	check := func(body []byte) error {
		if k := failedKeys(body); k > 0 {
			failed.Add(int64(k))
			withFailed.Add(1)
			return errors.New("batch answer with failed keys")
		}
		return nil
	}
	metrics := "http://" + rd.Addr + "/metrics"
	transitions := func() float64 {
		v, err := Scrape(ctx, metrics, "spangle_routerd_breaker_transitions_total")
		if err != nil && !errors.Is(err, ErrNoMetric) {
			b.log.Warn("scraping routerd's breaker transitions: " + err.Error())
		}
		return v
	}
	before := transitions()
	res, err := load.Run(ctx, load.Options{Addr: rd.Addr, Conns: manyClients, Duration: d, Seed: 31,
		Path: func(dst []byte, _ *rand.Rand) []byte { return append(dst, "/"+dataset.DB...) },
		Body: body, Check: check})
	if err != nil {
		b.failed(metric, err)
		return
	}
	opened := transitions() - before
	// An answer other than 200 (or none) fails all its keys.
	lost := failed.Load() + (res.Errors-withFailed.Load())*manyBatchKeys
	answered := (res.Requests+withFailed.Load())*manyBatchKeys - failed.Load()
	note := fmt.Sprintf("closed loop, %d conns, %v, 1 storaged, routerd defaults (proxy_timeout 100ms, cache off); %d batches, p50 %.0f ms, p99 %.0f ms; breaker transitions %.0f",
		manyClients, d, res.Requests+res.Errors, stats.Millis(stats.Percentile(res.Latencies, 0.5)),
		stats.Millis(stats.Percentile(res.Latencies, 0.99)), opened)
	if res.FirstError != "" {
		note += "; first error: " + res.FirstError
	}
	b.rep.Rows = append(b.rep.Rows,
		report.NewRow(metric+" throughput", "keys/s", float64(answered)/res.Elapsed.Seconds(), "", 0, note),
		report.NewRow(metric+" failed keys", "keys", float64(lost), "", 0, "", report.Target{Kind: report.ValueBelow, Limit: 1}))
}
