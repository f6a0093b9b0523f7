package load

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"spangle/shared/tlsconfig"
	"spangle/shared/tlstest"
	"spangle/shared/wire"
)

func key(i int) string               { return fmt.Sprintf("k%03d", i) }
func value(version, k string) string { return version + ":" + k }

// server answers GET /db/<key> with the value of the version that
// version() names; bad() picks answers to spoil.
func server(t *testing.T, version func() string, bad func(k string) int) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k := strings.TrimPrefix(r.URL.Path, "/db/")
		v := version()
		w.Header().Set(wire.HeaderVersion, v)
		w.Header().Set(wire.HeaderProxiedTo, "node-a:9599")
		switch bad(k) {
		case 1:
			http.Error(w, "no replica", http.StatusBadGateway)
		case 2:
			fmt.Fprint(w, value(v, "other"))
		default:
			fmt.Fprint(w, value(v, k))
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func opts(base string) Options {
	return Options{Base: base, DB: "db", Keys: 100, Key: key, Value: value, Readers: 3}
}

func TestSweepCountsEveryKeyAndFailure(t *testing.T) {
	srv := server(t, func() string { return "v1" }, func(k string) int {
		switch k {
		case "k007":
			return 1
		case "k042":
			return 2
		}
		return 0
	})
	res := Sweep(context.Background(), opts(srv.URL))
	if res.Reads != 100 || res.Failed != 2 {
		t.Fatalf("reads %d failed %d, want 100 and 2", res.Reads, res.Failed)
	}
	if res.Versions["v1"] != 98 || res.ProxiedTo["node-a:9599"] != 98 {
		t.Fatalf("versions %v, proxied %v", res.Versions, res.ProxiedTo)
	}
	if res.Statuses[http.StatusBadGateway] != 1 {
		t.Fatalf("statuses %v", res.Statuses)
	}
	got := map[string]bool{}
	for _, f := range res.Failures {
		got[f.Key] = true
	}
	if !got["k007"] || !got["k042"] {
		t.Fatalf("failures %v", res.Failures)
	}
	if res.Quantile(0.99) <= 0 || res.Quantile(0.5) > res.Quantile(0.99) {
		t.Fatalf("quantiles p50 %v p99 %v", res.Quantile(0.5), res.Quantile(0.99))
	}
}

func TestRunSeesSwitchAndRegression(t *testing.T) {
	var phase atomic.Int32 // 0: v1, 1: v2, 2: v1 again (a regression)
	var late atomic.Int32  // answers given in phase 2
	srv := server(t, func() string {
		switch phase.Load() {
		case 1:
			return "v2"
		case 2:
			late.Add(1)
		}
		return "v1"
	}, func(string) int { return 0 })
	run := Start(context.Background(), opts(srv.URL))
	wait := func(cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatal("timed out")
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	wait(func() bool { return run.SeenByAll("v1") })
	phase.Store(1)
	wait(func() bool { return run.SeenByAll("v2") })
	if _, ok := run.FirstSeen("v2"); !ok {
		t.Fatal("FirstSeen(v2) not set")
	}
	phase.Store(2)
	wait(func() bool { return late.Load() > 30 })
	res := run.Stop()
	if res.Failed != 0 {
		t.Fatalf("%d failures: %v", res.Failed, res.Failures)
	}
	if res.Regressions == 0 {
		t.Fatalf("v1 after v2 not counted as a regression: %v", res.Versions)
	}
	if res.AllSeen["v2"].Before(res.FirstSeen["v2"]) {
		t.Fatalf("AllSeen %v before FirstSeen %v", res.AllSeen["v2"], res.FirstSeen["v2"])
	}
}

// TestSweepOverMutualTLS: with Options.TLS the readers present its
// client certificate to a server requiring one; without it every read
// fails.
func TestSweepOverMutualTLS(t *testing.T) {
	set := tlstest.New(t)
	src, err := tlsconfig.New(tlsconfig.Options{Settings: set.Peer(tlsconfig.ClientAuthRequire)})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// Not httptest's StartTLS: it would serve a certificate of its own.
	hs := &http.Server{ErrorLog: log.New(io.Discard, "", 0), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(wire.HeaderVersion, "v1")
		fmt.Fprint(w, value("v1", strings.TrimPrefix(r.URL.Path, "/db/")))
	})}
	go hs.Serve(tls.NewListener(l, src.ServerConfig()))
	t.Cleanup(func() { hs.Close() })
	client, err := tlsconfig.New(tlsconfig.Options{Settings: set.Client()})
	if err != nil {
		t.Fatal(err)
	}
	o := opts("https://" + l.Addr().String())
	o.TLS = client.ClientConfig("127.0.0.1")
	if res := Sweep(context.Background(), o); res.Reads != 100 || res.Failed != 0 || res.Versions["v1"] != 100 {
		t.Fatalf("over TLS: reads %d failed %d versions %v (last %v)", res.Reads, res.Failed, res.Versions, res.Last)
	}
	o.TLS = nil
	if res := Sweep(context.Background(), o); res.Failed != res.Reads || res.Reads == 0 {
		t.Fatalf("without TLS: reads %d failed %d", res.Reads, res.Failed)
	}
}
