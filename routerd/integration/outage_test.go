package integration

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"spangle/shared/proctest"
	"spangle/shared/topo/statictopo"
	"spangle/shared/wire"
)

// freeze stops s with SIGSTOP until the test ends (or thaw), so that it
// holds its sockets open and answers nothing, as a hung process does.
func freeze(t *testing.T, s *storaged) {
	s.Signal(syscall.SIGSTOP)
	// Registered after proctest's own cleanup, so it runs first: a
	// stopped process could not handle the SIGTERM that stops it.
	t.Cleanup(func() { s.Signal(syscall.SIGCONT) })
}

// TestFullOutageIsNotNotFound: with every replica of a db frozen until
// routerd's discovery has dropped them all, routerd still knows the db:
// a lookup gets 502, not 404; a cached key of the served version is still
// answered; /healthz answers 404 naming the served version ERROR
// (unavailable); GET /<db> still shows it. When the replicas come back,
// lookups are answered again.
func TestFullOutageIsNotNotFound(t *testing.T) {
	src := source(t, "v1")
	a, b := startStoraged(t, src), startStoraged(t, src)
	cfg := staticConfig(a, b) // routerd's own discovery, polling every 100ms
	cfg.CacheSize = 16 << 20
	cfg.ProxyTimeout = failoverTimeout
	rd := startRouterd(t, cfg, nil, testDB)
	client := &http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: time.Minute}
	defer client.CloseIdleConnections()
	cached, other := keyName(1), keyName(2)
	if code, body, _, _ := get(t, client, rd.base+wire.KeyPath(testDB, []byte(cached))); code != 200 || body != valueOf("v1", cached) {
		t.Fatalf("before the outage: %d %q", code, body)
	}

	freeze(t, a)
	freeze(t, b)
	deadline := time.Now().Add(time.Minute)
	for len(rd.r.Server().Status("").Nodes) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("routerd still lists nodes a minute after they froze: %+v", rd.r.Server().Status("").Nodes)
		}
		time.Sleep(50 * time.Millisecond)
	}
	code, body, hdr, _ := get(t, client, rd.base+wire.KeyPath(testDB, []byte(other)))
	if code != http.StatusBadGateway || hdr.Get(wire.HeaderVersion) != "v1" {
		t.Fatalf("uncached key with every replica frozen: %d %q (version %q), want 502 at v1", code, body, hdr.Get(wire.HeaderVersion))
	}
	code, body, hdr, _ = get(t, client, rd.base+wire.KeyPath(testDB, []byte(cached)))
	if code != 200 || body != valueOf("v1", cached) || hdr.Get(wire.HeaderVersion) != "v1" {
		t.Fatalf("cached key with every replica frozen: %d %q (version %q), want the cached v1 value", code, body, hdr.Get(wire.HeaderVersion))
	}
	code, body, _, _ = get(t, client, rd.base+wire.PathHealth)
	var hz map[string]map[string]wire.Health
	if err := json.Unmarshal([]byte(body), &hz); err != nil {
		t.Fatalf("/healthz %q: %v", body, err)
	}
	if h := hz[testDB]["v1"]; code != http.StatusNotFound || h.State != wire.StateError || !strings.Contains(h.Reason, "unavailable") {
		t.Fatalf("/healthz with every replica frozen: %d %s, want 404 with %s v1 ERROR unavailable", code, body, testDB)
	}
	if code, body, _, _ := get(t, client, rd.base+"/"+testDB, "Accept", "application/json"); code != 200 || !strings.Contains(body, "unavailable") {
		t.Fatalf("GET /%s with every replica frozen: %d %s", testDB, code, body)
	}

	a.Signal(syscall.SIGCONT)
	b.Signal(syscall.SIGCONT)
	deadline = time.Now().Add(time.Minute)
	for {
		code, body, _, _ = get(t, client, rd.base+wire.KeyPath(testDB, []byte(other)))
		if code == 200 && body == valueOf("v1", other) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a minute after the replicas came back: %d %q", code, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code, body, _, _ := get(t, client, rd.base+wire.PathHealth); code != 200 {
		t.Fatalf("/healthz after the replicas came back: %d %s", code, body)
	}
}

// TestDeletedDBIsNotFoundUnpinned: a db removed from the source while
// routerd's map still lists it (its discovery has not polled since) gets
// 404 for a request that pinned nothing, never 410, and 410 for one that
// pinned its version; once the map follows, the db is gone from routerd.
func TestDeletedDBIsNotFoundUnpinned(t *testing.T) {
	src := source(t, "v1")
	a := startStoraged(t, src)
	// Discovery that polls only when told: the map lags as long as the
	// test needs, which makes the window between storaged's removal and
	// routerd's map deterministic.
	w, err := statictopo.New(statictopo.Options{URLs: []string{a.url()}, Period: time.Hour, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	w.Poll(ctx)
	rd := startRouterd(t, failoverConfig(a), w, testDB)
	client := &http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: time.Minute}
	defer client.CloseIdleConnections()
	path := wire.KeyPath(testDB, []byte(keyName(5)))
	if code, _, _, _ := get(t, client, rd.base+path); code != 200 {
		t.Fatalf("before the removal: %d", code)
	}

	if err := os.RemoveAll(filepath.Join(src, testDB)); err != nil {
		t.Fatal(err)
	}
	a.Signal(syscall.SIGHUP)
	deadline := time.Now().Add(time.Minute)
	for {
		code, _, _, _ := get(t, client, a.url()+path)
		if code == http.StatusNotFound {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("storaged still answers %d a minute after the db was removed", code)
		}
		time.Sleep(50 * time.Millisecond)
	}
	code, body, hdr, _ := get(t, client, rd.base+path)
	if code != http.StatusNotFound || hdr.Get(wire.HeaderVersion) != "" {
		t.Fatalf("unpinned, db removed, map not yet updated: %d %q (version %q), want 404 without a version", code, body, hdr.Get(wire.HeaderVersion))
	}
	if code, body, _, _ := get(t, client, rd.base+path, wire.HeaderVersion, "v1"); code != http.StatusGone {
		t.Fatalf("pinned v1, db removed: %d %q, want 410", code, body)
	}
	// The node lists the db's version as REMOVING until it has deleted
	// it; then the map, and routerd, drop the db.
	deadline = time.Now().Add(time.Minute)
	for w.Poll(ctx); rd.r.Server().Status("").DBs[testDB].Versions != nil; w.Poll(ctx) {
		if time.Now().After(deadline) {
			t.Fatalf("routerd still lists %s a minute after its removal", testDB)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code, body, _, _ := get(t, client, rd.base+path); code != http.StatusNotFound || body != "no such db\n" {
		t.Fatalf("after the map followed: %d %q, want 404 no such db", code, body)
	}
}

// TestPlainAnswers: the small contract points of real processes. A
// negative duration flag stops storaged with a message naming it;
// storaged's 410 names the version it serves for a db it knows, and no
// version for one it does not; routerd's 400 bodies are plain messages.
func TestPlainAnswers(t *testing.T) {
	src := source(t, "v1")
	for _, flag := range []string{"--refresh-period", "--version-retention", "--time-to-converge", "--test-delay", "--zk-session-timeout", "--zk-connect-timeout"} {
		// A storaged that accepted the flag would serve: 15s ends it.
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		out, err := exec.CommandContext(ctx, storagedBin, "--source", src, "--local-store", t.TempDir(),
			"--bind", proctest.FreeAddr(t), flag+"=-1s").CombinedOutput()
		cancel()
		if err == nil || !strings.Contains(string(out), strings.TrimPrefix(flag, "--")) {
			t.Errorf("storaged %s=-1s: err %v, output %q; want a failure naming the flag", flag, err, out)
		}
	}

	a := startStoraged(t, src)
	rd := startRouterd(t, failoverConfig(a), pollNodes(t, a), testDB)
	client := &http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: time.Minute}
	defer client.CloseIdleConnections()
	path := wire.KeyPath(testDB, []byte(keyName(1)))
	if code, _, hdr, _ := get(t, client, a.url()+path, wire.HeaderVersion, "v0"); code != http.StatusGone || hdr.Get(wire.HeaderVersion) != "v1" {
		t.Errorf("storaged, pinned unknown version of a known db: %d, version %q; want 410 naming v1", code, hdr.Get(wire.HeaderVersion))
	}
	if code, _, hdr, _ := get(t, client, a.url()+"/nodb/k", wire.HeaderVersion, "v0"); code != http.StatusGone || hdr.Get(wire.HeaderVersion) != "" {
		t.Errorf("storaged, pinned version of an unknown db: %d, version %q; want 410 without one", code, hdr.Get(wire.HeaderVersion))
	}
	for path, want := range map[string]string{"/_x/k": "bad path\n", "/" + testDB + "/": "empty key\n", "/.x": "bad path\n"} {
		if code, body, _, _ := get(t, client, rd.base+path); code != http.StatusBadRequest || body != want {
			t.Errorf("routerd GET %s: %d %q, want 400 %q", path, code, body, want)
		}
	}
}
