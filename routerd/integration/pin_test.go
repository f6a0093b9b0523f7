package integration

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"spangle/shared/topo"
	"spangle/shared/wire"
	"spangle/shared/zktest"
)

// pinReader is what one reader of TestPinRollback saw: the versions it
// was answered from, in order, with repeats folded, and any answer whose
// pin header disagrees with its version.
type pinReader struct {
	failureLog
	reads  int
	steps  []string
	badPin []string
}

// pinReaders runs n readers, reader i through bases[i%len(bases)], each
// looping over all keys of db until ctx ends.
func pinReaders(ctx context.Context, n int, bases []string, db string, keys int) []*pinReader {
	client := &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: n}, Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	out := make([]*pinReader, n)
	var wg sync.WaitGroup
	for r := range out {
		st := &pinReader{}
		out[r] = st
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := r; ctx.Err() == nil; i++ {
				key := keyName(i % keys)
				resp, err := client.Get(bases[r%len(bases)] + wire.KeyPath(db, []byte(key)))
				if err != nil {
					if ctx.Err() == nil {
						st.fail("%s: %v", key, err)
					}
					continue
				}
				st.reads++
				pin := resp.Header.Get(wire.HeaderPin)
				if v, ok := st.answer(key, resp); ok {
					if pin != "" && pin != v {
						st.badPin = append(st.badPin, fmt.Sprintf("%s answered with %s=%s", v, wire.HeaderPin, pin))
					}
					if len(st.steps) == 0 || st.steps[len(st.steps)-1] != v {
						st.steps = append(st.steps, v)
					}
				}
			}
		}()
	}
	wg.Wait()
	return out
}

// nodeStatus reads a storaged's JSON status.
func nodeStatus(t *testing.T, s *storaged) wire.NodeStatus {
	t.Helper()
	st, err := s.handle().Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestPinRollback runs 3 storaged nodes in cluster mode and 2 routerds
// on a real ZooKeeper, with 8 readers looping over all keys, 4 through
// each routerd. Version v2 is published, then _PIN rolls the db back to
// v1, whose local copies every node has deleted by then (and whose
// znodes the leader has pruned), then the marker is deleted. No read may
// fail, and every reader's versions must be exactly v1, v2, v1, v2: one
// switch per step. A marker naming a missing version, or a malformed
// one, changes nothing and shows on the leader's status.
func TestPinRollback(t *testing.T) {
	zks := zktest.Start(t)
	const cluster = "pin"
	root := t.TempDir()
	conf := filepath.Join(t.TempDir(), "storaged.toml")
	if err := os.WriteFile(conf, []byte("[sharding]\nprune_after = \"1s\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var nodes []*storaged
	for range 3 {
		nodes = append(nodes, startClusterStoraged(t, zks.Addr(), cluster, root,
			"--config", conf, "--refresh-period", "1s", "--version-retention", "2s"))
	}
	w := watchRegistered(t, zks.Addr(), cluster, nodes)
	writeVersion(t, root, testDB, "v1", testParts, testKeys)
	rescanAll(nodes)
	waitMap(t, w, 2*time.Minute, fullyReplicated(testDB, "v1", 2))

	cfg := zkRouterdConfig(zks.Addr(), cluster)
	rds := []*routerd{startRouterd(t, cfg, nil, testDB), startRouterd(t, cfg, nil, testDB)}
	bases := []string{rds[0].base, rds[1].base}
	waitAll := func(version, pin string) {
		t.Helper()
		for _, rd := range rds {
			rd.waitServed(t, testDB, version, 2*time.Minute)
			if got := rd.r.Server().Versions().Current().Pin(testDB); got != pin {
				t.Fatalf("routerd serves %s with pin %q, want %q", version, got, pin)
			}
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan []*pinReader)
	go func() { done <- pinReaders(ctx, 8, bases, testDB, testKeys) }()
	time.Sleep(time.Second)

	writeVersion(t, root, testDB, "v2", testParts, testKeys)
	waitAll("v2", "")
	// v1 leaves every node (retention) and then the map (pruned).
	waitMap(t, w, 2*time.Minute, func(m *topo.Map) string {
		if m.Version(testDB, "v1") != nil {
			return "v1 is still in the map"
		}
		return ""
	})
	time.Sleep(time.Second)

	pinFile := filepath.Join(root, testDB, "_PIN")
	if err := os.WriteFile(pinFile, []byte("v1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pinned := time.Now()
	waitAll("v1", "v1")
	t.Logf("every routerd serves the pinned v1 %v after the marker was written (v1 reloaded from the source)", time.Since(pinned).Round(10*time.Millisecond))
	time.Sleep(time.Second)

	// A marker naming a missing version, then a malformed one: nothing
	// changes, and the leader says why.
	for _, bad := range []struct{ body, want string }{{"v9\n", "not in the source"}, {"v1\nv2\n", "malformed"}} {
		if err := os.WriteFile(pinFile, []byte(bad.body), 0o644); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(time.Minute)
		for {
			var errs []string
			for _, n := range nodes {
				if c := nodeStatus(t, n).Coordination; c != nil && c.PinErrors[testDB] != "" {
					errs = append(errs, c.PinErrors[testDB])
				}
			}
			if len(errs) == 1 && strings.Contains(errs[0], bad.want) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("marker %q: pin errors on the nodes' status %q, want one with %q", bad.body, errs, bad.want)
			}
			time.Sleep(100 * time.Millisecond)
		}
		time.Sleep(1500 * time.Millisecond) // a scan or two
		waitAll("v1", "v1")
		if p := w.Map().PinOf(testDB); p.Version != "v1" {
			t.Fatalf("marker %q moved the published pin to %+v", bad.body, p)
		}
	}

	if err := os.Remove(pinFile); err != nil {
		t.Fatal(err)
	}
	waitAll("v2", "")
	time.Sleep(time.Second)
	cancel()
	rs := <-done
	reads := 0
	for i, r := range rs {
		reads += r.reads
		if r.failCount > 0 {
			t.Errorf("reader %d: %d of %d reads failed: %v", i, r.failCount, r.reads, r.failures)
		}
		if got := strings.Join(r.steps, " "); got != "v1 v2 v1 v2" {
			t.Errorf("reader %d (routerd %d) saw versions %q, want \"v1 v2 v1 v2\"", i, i%2, got)
		}
		if len(r.badPin) > 0 {
			t.Errorf("reader %d: %v", i, r.badPin[:min(3, len(r.badPin))])
		}
	}
	t.Logf("%d reads by 8 readers", reads)
	for _, n := range nodes {
		if st := nodeStatus(t, n).DBs[testDB]; st.Pin != "" || st.Current != "v2" {
			t.Errorf("%s after the unpin: pin %q, current %q", n.addr, st.Pin, st.Current)
		}
	}
}
