package daemon

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"spangle/shared/seqfile"
	"spangle/shared/tlsconfig"
	"spangle/shared/tlstest"
	"spangle/shared/topo/memtopo"
	"spangle/storaged/config"
	"spangle/storaged/internal/testutil"
)

// tlsGet asks url with a client of st; it returns the status, or 0 and
// the error.
func tlsGet(t *testing.T, st tlsconfig.Settings, url string) (int, string) {
	t.Helper()
	src, err := tlsconfig.New(tlsconfig.Options{Settings: st})
	if err != nil {
		t.Fatal(err)
	}
	tr := src.NewTransport()
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// tlsGetAll GETs the urls in turn on one kept-alive connection and
// returns their statuses.
func tlsGetAll(t *testing.T, st tlsconfig.Settings, urls ...string) []int {
	t.Helper()
	src, err := tlsconfig.New(tlsconfig.Options{Settings: st})
	if err != nil {
		t.Fatal(err)
	}
	tr := src.NewTransport()
	defer tr.CloseIdleConnections()
	tr.MaxConnsPerHost = 1
	var codes []int
	for _, u := range urls {
		resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get(u)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		codes = append(codes, resp.StatusCode)
	}
	return codes
}

// TestTLSClusterInProcess: two nodes with mutual TLS; the second copies
// the version from the first over TLS (a peer), lookups and status go
// over TLS, the peer endpoints answer peers only, and a plaintext client
// gets a clear 400.
func TestTLSClusterInProcess(t *testing.T) {
	set := tlstest.New(t)
	root := t.TempDir()
	srv := memtopo.NewServer()
	start := func() *Daemon {
		d, _ := startMemNode(t, srv, root, func(cfg *config.Config) {
			cfg.Sharding.TimeToConverge = 200 * time.Millisecond
			cfg.TLS = set.Peer("require")
		})
		return d
	}
	a := start()
	recs := testutil.Records(200, "v1")
	testutil.WriteVersion(t, root, "db", "v1", 4, testutil.Sharded, seqfile.WriterOptions{}, recs)
	a.Refresh()
	waitFor(t, "the first node active", func() bool { return a.Versions.CurrentVersion("db") == "v1" })
	b := start()
	waitFor(t, "the second node active", func() bool { return b.Versions.CurrentVersion("db") == "v1" })

	// b's partitions came from a, over TLS: the copier answered a peer.
	code, metrics := tlsGet(t, set.Client(), "https://"+b.Addr+"/metrics")
	if code != 200 || !strings.Contains(metrics, `spangle_storaged_partitions_loaded_total{from="peer"} 4`) {
		t.Fatalf("metrics over TLS: %d; want 4 partitions copied from the peer:\n%s", code, grep(metrics, "partitions_loaded"))
	}
	if !strings.Contains(metrics, "spangle_tls_cert_expiry_timestamp_seconds") {
		t.Error("no certificate expiry metric")
	}
	// Lookups over TLS with a client certificate.
	for _, d := range []*Daemon{a, b} {
		if code, body := tlsGet(t, set.Client(), "https://"+d.Addr+"/db/"+string(recs[7].Key)); code != 200 || body != string(recs[7].Value) {
			t.Fatalf("%s: lookup over TLS = %d %q", d.Addr, code, body)
		}
	}
	// The peer endpoints: a peer gets the partition and a vote, a
	// client that is no peer 403.
	for _, path := range []string{"/_partition/db/v1/0", "/_elect/db/v1/0"} {
		if code, body := tlsGet(t, set.Peer(""), "https://"+a.Addr+path); code != 200 {
			t.Errorf("%s by a peer = %d %q", path, code, body)
		}
		if code, body := tlsGet(t, set.Client(), "https://"+a.Addr+path); code != http.StatusForbidden {
			t.Errorf("%s by a client that is no peer = %d %q, want 403", path, code, body)
		}
	}
	// A lookup first (served on h1fast's loop), then a peer endpoint on
	// the same connection (handed to net/http): the endpoint still sees
	// the client's certificate.
	key := "https://" + a.Addr + "/db/" + string(recs[7].Key)
	if codes := tlsGetAll(t, set.Client(), key, "https://"+a.Addr+"/_partition/db/v1/0"); codes[0] != 200 || codes[1] != http.StatusForbidden {
		t.Errorf("a lookup, then a peer endpoint by a client that is no peer: %v, want [200 403]", codes)
	}
	if codes := tlsGetAll(t, set.Peer(""), key, key, "https://"+a.Addr+"/_elect/db/v1/0"); codes[0] != 200 || codes[2] != 200 {
		t.Errorf("lookups, then a peer endpoint by a peer: %v, want 200s", codes)
	}
	// Without a client certificate: no handshake. Plaintext: a 400
	// saying why.
	if code, msg := tlsGet(t, tlsconfig.Settings{CAFile: set.CAFile}, "https://"+a.Addr+"/"); code != 0 {
		t.Errorf("no client certificate: %d %q, want a failed handshake", code, msg)
	}
	if code, body, _ := httpGet(t, "http://"+a.Addr+"/"); code != http.StatusBadRequest || !strings.Contains(body, "HTTPS") {
		t.Errorf("plaintext on the TLS port: %d %q", code, body)
	}
}

// TestTLSStartFailsNamingTheFile: a node whose key does not match its
// certificate does not start, and says which file.
func TestTLSStartFailsNamingTheFile(t *testing.T) {
	set := tlstest.New(t)
	cfg := config.Default()
	cfg.Source, cfg.LocalStore, cfg.Bind = t.TempDir(), t.TempDir(), "127.0.0.1:0"
	cfg.TLS = set.Peer("")
	cfg.TLS.KeyFile = set.ClientKey
	_, err := Start(context.Background(), cfg, zaptest.NewLogger(t))
	if err == nil || !strings.Contains(err.Error(), set.ClientKey) {
		t.Fatalf("Start with a mismatched key: %v", err)
	}
}
