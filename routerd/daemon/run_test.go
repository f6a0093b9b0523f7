package daemon

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"spangle/routerd/config"
	"spangle/shared/topo"
	"spangle/shared/wire"
)

// standIn is an httptest server speaking the storaged contract, for the
// early wiring test only; the integration tests use the real storaged.
func standIn(t *testing.T) (*httptest.Server, string) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tg, err := wire.ParsePath(r.URL.EscapedPath())
		if err != nil || !tg.HasKey {
			http.Error(w, "bad", 400)
			return
		}
		w.Header().Set(wire.HeaderVersion, r.Header.Get(wire.HeaderVersion))
		w.Write([]byte(r.Header.Get(wire.HeaderVersion) + ":" + string(tg.Key)))
	}))
	return srv, strings.TrimPrefix(srv.URL, "http://")
}

// testProxyTimeout is generous: these tests are about starting and
// stopping on loaded machines, not latency.
const testProxyTimeout = 2 * time.Second

// settle waits for the goroutine count to come back to at most n.
func settle(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > n {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("goroutines: %d, want <= %d\n%s", runtime.NumGoroutine(), n, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestStartWithXDSStopsEverything(t *testing.T) {
	srv, addr := standIn(t)
	defer srv.Close()
	base := runtime.NumGoroutine()
	mir := oneNodeMap(addr)

	cfg := config.Default()
	cfg.Bind = "127.0.0.1:0"
	cfg.XDSBind = "127.0.0.1:0"
	cfg.ProxyTimeout = testProxyTimeout // about stopping, not latency
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r, err := Start(ctx, cfg, Deps{Watcher: mir})
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{}}
	getKeys(t, client, "http://"+r.Addr().String(), 20, addr)
	// xds follows routerd's choice of version.
	if st, err := r.XDS().WaitPush(ctx, 0); err != nil || len(st.DBs) != 1 {
		t.Fatalf("xds status %+v %v", st, err)
	}
	client.CloseIdleConnections()
	cancel()
	if err := r.Wait(); err != nil {
		t.Fatal(err)
	}
	srv.CloseClientConnections()
	settle(t, base)
}

func TestStartFailsCleanly(t *testing.T) {
	base := runtime.NumGoroutine()
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	defer l.Close()
	cfg := config.Default()
	cfg.Bind = l.Addr().String() // taken
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if _, err := Start(context.Background(), cfg, Deps{Watcher: topo.NewMirror()}); err == nil {
		t.Fatal("Start on a taken port succeeded")
	}
	settle(t, base)
}

// A routerd started from a file with keys of the older names runs and
// logs a warning that names each new key.
func TestStartWarnsOfOldKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "routerd.toml")
	if err := os.WriteFile(path, []byte("bind = \"127.0.0.1:0\"\nreplication = 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse([]string{"--config", path}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zap.WarnLevel)
	ctx, cancel := context.WithCancel(context.Background())
	r, err := Start(ctx, cfg, Deps{Watcher: topo.NewMirror(), Logger: zap.New(core)})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	cancel()
	if err := r.Wait(); err != nil {
		t.Fatal(err)
	}
	warned := logs.FilterMessageSnippet("deprecated").FilterField(zap.String("key", "replication")).
		FilterField(zap.String("use", "sharding.replication"))
	if warned.Len() != 1 || logs.Len() != 1 {
		t.Fatalf("%d warnings name sharding.replication; logged: %v", warned.Len(), logs.All())
	}
}

// getKeys gets /db/key from the router at base n times through client
// and fails the test unless each answer is v1's value, proxied to addr.
func getKeys(t *testing.T, client *http.Client, base string, n int, addr string) {
	t.Helper()
	for i := 0; i < n; i++ {
		resp, err := client.Get(base + "/db/key")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != "v1:key" || resp.Header.Get(wire.HeaderProxiedTo) != addr {
			t.Fatalf("answer %q %v", body, resp.Header)
		}
	}
}

// oneNodeMap is a mirror of a map where the node at addr alone holds
// db/v1, of one partition.
func oneNodeMap(addr string) *topo.Mirror {
	mir := topo.NewMirror()
	var b topo.Builder
	b.AddNode(topo.Node{Addr: addr})
	b.AddVersion("db", "v1", topo.VersionInfo{NumPartitions: 1})
	b.AddReplica("db", "v1", 0, addr)
	mir.Publish(b.Build(0))
	return mir
}
