package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"spangle/shared/wire"
)

// failureLog counts a reader's failures and keeps the first few,
// described.
type failureLog struct {
	failCount int
	failures  []string
}

func (f *failureLog) fail(format string, args ...any) {
	f.failCount++
	if len(f.failures) < 5 {
		f.failures = append(f.failures, fmt.Sprintf(format, args...))
	}
}

// answer reads and closes resp's body, the answer to a GET of key, and
// returns the version it names when it is 200 with key's value in that
// version; otherwise it records the failure and returns ok false.
func (f *failureLog) answer(key string, resp *http.Response) (version string, ok bool) {
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	v := resp.Header.Get(wire.HeaderVersion)
	switch {
	case err != nil:
		f.fail("%s: reading body: %v", key, err)
	case resp.StatusCode != 200:
		f.fail("%s: status %d: %s", key, resp.StatusCode, body)
	case string(body) != valueOf(v, key):
		f.fail("%s: value %q under version %q", key, body, v)
	default:
		return v, true
	}
	return v, false
}

// readerStats is what one reader saw.
type readerStats struct {
	failureLog
	reads    int
	versions map[string]int // answers per version
	wentDown []string       // version went from a to b < a
	statuses map[int]int
}

// readers runs n readers, each looping over all keys of db through base
// until ctx ends. Every answer must be 200 with the value of the version
// its header names, and a reader's versions must never go down.
func readers(ctx context.Context, n int, base, db string, keys int) []*readerStats {
	client := &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: n}, Timeout: 5 * time.Second}
	out := make([]*readerStats, n)
	var wg sync.WaitGroup
	for r := 0; r < n; r++ {
		st := &readerStats{versions: map[string]int{}, statuses: map[int]int{}}
		out[r] = st
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			defer client.CloseIdleConnections()
			last := ""
			for i := r; ctx.Err() == nil; i++ {
				key := keyName(i % keys)
				resp, err := client.Get(base + wire.KeyPath(db, []byte(key)))
				if err != nil {
					st.fail("%s: %v", key, err)
					continue
				}
				st.reads++
				st.statuses[resp.StatusCode]++
				if v, ok := st.answer(key, resp); ok {
					st.versions[v]++
					if v < last {
						st.wentDown = append(st.wentDown, last+">"+v)
					}
					last = v
				}
			}
		}(r)
	}
	wg.Wait()
	return out
}

// total sums the readers' counts.
func total(rs []*readerStats) (reads, failures int, samples []string, down []string, versions map[string]int) {
	versions = map[string]int{}
	for _, r := range rs {
		reads += r.reads
		failures += r.failCount
		samples = append(samples, r.failures...)
		down = append(down, r.wentDown...)
		for v, n := range r.versions {
			versions[v] += n
		}
	}
	return
}
