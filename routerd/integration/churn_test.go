package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"spangle/shared/wire"
)

// sockets counts the open sockets of process pid.
func sockets(t *testing.T, pid int) int {
	t.Helper()
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink(dir + "/" + e.Name()); err == nil && strings.HasPrefix(l, "socket:") {
			n++
		}
	}
	return n
}

// TestChurnLeaksNothing hedges and cancels a lot (slow replicas, a generous
// hedge budget, clients that give up mid-request), then stops routerd: its
// goroutines all end and storaged is left with no connection of its.
func TestChurnLeaksNothing(t *testing.T) {
	src := source(t, "v1")
	a := startStoraged(t, src, flagDelay, "15ms")
	b := startStoraged(t, src, flagDelay, "15ms")
	w := pollNodes(t, a, b)
	time.Sleep(100 * time.Millisecond)
	baseGoroutines := runtime.NumGoroutine()
	baseA, baseB := sockets(t, a.PID()), sockets(t, b.PID())

	cfg := staticConfig(a, b)
	cfg.ProxyTimeout = 60 * time.Millisecond
	cfg.ProxyStageTimeout = 5 * time.Millisecond
	cfg.HedgeBudget = 1
	cfg.CacheSize = 1 << 20
	rd := startRouterdNoCleanup(t, cfg, w, testDB)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[string]int{}
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := &http.Client{Transport: &http.Transport{Proxy: nil}}
			defer client.CloseIdleConnections()
			for ctx.Err() == nil {
				rctx, rcancel := context.WithTimeout(ctx, time.Duration(5+rand.IntN(40))*time.Millisecond)
				req, _ := http.NewRequestWithContext(rctx, "GET", rd.base+wire.KeyPath(testDB, []byte(keyName(rand.IntN(testKeys)))), nil)
				resp, err := client.Do(req)
				outcome := "client gave up"
				if err == nil {
					resp.Body.Close()
					outcome = resp.Status
				}
				rcancel()
				mu.Lock()
				codes[outcome]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	t.Logf("outcomes %v; hedges %v", codes, rd.metric(t, "spangle_routerd_hedges_started_total"))
	rd.cancel()
	if err := rd.r.Wait(); err != nil {
		t.Fatal(err)
	}

	deadline := time.Now().Add(5 * time.Second)
	for {
		g := runtime.NumGoroutine()
		sa, sb := sockets(t, a.PID()), sockets(t, b.PID())
		if g <= baseGoroutines && sa <= baseA && sb <= baseB {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("after stop: %d goroutines (before %d), storaged sockets %d and %d (before %d and %d)\n%s",
				g, baseGoroutines, sa, sb, baseA, baseB, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}
