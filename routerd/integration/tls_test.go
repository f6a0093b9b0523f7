package integration

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"spangle/shared/certgen"
	"spangle/shared/proctest"
	"spangle/shared/tlsconfig"
	"spangle/shared/tlstest"
	"spangle/shared/topo"
	"spangle/shared/wire"
)

// startTLSStoraged runs storaged serving TLS with the given certificate
// files (client_auth = require, the set's peer name) and waits until it
// is healthy to a client of set.
func startTLSStoraged(t *testing.T, set *tlstest.Set, source, cert, key, ca string) *storaged {
	t.Helper()
	conf := filepath.Join(t.TempDir(), "storaged.toml")
	body := fmt.Sprintf("[tls]\ncert_file = %q\nkey_file = %q\nca_file = %q\nclient_auth = \"require\"\npeer_names = [%q]\n",
		cert, key, ca, tlstest.PeerName)
	if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := proctest.FreeAddr(t)
	s := &storaged{addr: addr, Process: proctest.Start(t, storagedBin, "--config", conf, "--source", source,
		"--local-store", t.TempDir(), "--bind", addr)}
	// Healthy over TLS, to a client of the node's own CA.
	src, err := tlsconfig.New(tlsconfig.Options{Settings: tlsconfig.Settings{CertFile: cert, KeyFile: key, CAFile: ca, PeerNames: []string{"*.example", tlstest.PeerName}}})
	if err != nil {
		t.Fatal(err)
	}
	tr := src.NewTransport()
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := client.Get("https://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not healthy over TLS: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestTLSToStoraged: routerd asks storaged over mutual TLS (static
// discovery over https too) and answers its apps in plaintext; a
// storaged whose certificate is from another CA, or valid for neither
// the address it registered nor a peer name, is unreachable: 502 when
// no other replica is left, logged and counted.
func TestTLSToStoraged(t *testing.T) {
	set := tlstest.New(t)
	src := source(t, "v1")
	good := startTLSStoraged(t, set, src, set.CertFile, set.KeyFile, set.CAFile)

	cfg := staticConfig()
	cfg.Storaged = []string{"https://" + good.addr}
	cfg.TLS = set.Client()
	rd := startRouterd(t, cfg, nil, testDB)
	client := &http.Client{Transport: &http.Transport{Proxy: nil}}
	defer client.CloseIdleConnections()
	for i := 0; i < 200; i += 7 {
		key := keyName(i)
		if code, body, hdr, _ := get(t, client, rd.base+wire.KeyPath(testDB, []byte(key))); code != 200 || body != valueOf("v1", key) || hdr.Get(wire.HeaderProxiedTo) != good.addr {
			t.Fatalf("%s through routerd: %d %q", key, code, body)
		}
	}

	// Two rogue nodes, registered as replicas of every partition.
	wrongName := func() *storaged {
		c, k := set.Issue(t, certgen.Request{Names: []string{"other.example"}})
		return startTLSStoraged(t, set, src, c, k, set.CAFile)
	}()
	otherCA := func() *storaged {
		c, k, ca := set.OtherCA(t, certgen.Request{Names: []string{"127.0.0.1", tlstest.PeerName}})
		return startTLSStoraged(t, set, src, c, k, ca)
	}()
	mirror := topo.NewMirror()
	publish := func(nodes ...*storaged) {
		m := topo.EmptyMap()
		var addrs []string
		for _, n := range nodes {
			m.Nodes[n.addr] = topo.Node{ID: n.addr, ShardID: n.addr, Addr: n.addr}
			addrs = append(addrs, n.addr)
		}
		v := &topo.Version{VersionInfo: topo.VersionInfo{NumPartitions: testParts, Created: time.Now()}}
		for p := 0; p < testParts; p++ {
			v.Replicas = append(v.Replicas, addrs)
		}
		m.DBs[testDB] = map[string]*topo.Version{"v1": v}
		mirror.Publish(m)
	}
	publish(wrongName, otherCA)
	cfg = failoverConfig()
	cfg.ProxyTimeout = 2 * time.Second
	cfg.TLS = set.Client()
	rogue := startRouterd(t, cfg, mirror, testDB)
	for i := 0; i < 20; i++ {
		if code, body, _, _ := get(t, client, rogue.base+wire.KeyPath(testDB, []byte(keyName(i)))); code != http.StatusBadGateway {
			t.Fatalf("only rogue replicas: %d %q, want 502", code, body)
		}
	}
	if n := rogue.metric(t, `spangle_tls_handshakes_refused_total{peer="server"}`); n < 2 {
		t.Fatalf("refused servers counted %v, want at least one per rogue node", n)
	}
	// With the good node listed too, every read is answered by it.
	publish(wrongName, otherCA, good)
	for i := 0; i < 50; i++ {
		key := keyName(i)
		code, body, hdr, _ := get(t, client, rogue.base+wire.KeyPath(testDB, []byte(key)))
		if code != 200 || body != valueOf("v1", key) || hdr.Get(wire.HeaderProxiedTo) != good.addr {
			t.Fatalf("%s with a good replica: %d %q from %q", key, code, body, hdr.Get(wire.HeaderProxiedTo))
		}
	}
	// The routerd of a plaintext cluster cannot read a TLS storaged: a
	// clear error, no crash.
	if code, body, _, _ := get(t, client, "http://"+good.addr+"/healthz"); code != http.StatusBadRequest || !strings.Contains(body, "HTTPS") {
		t.Fatalf("plaintext on storaged's TLS port: %d %q", code, body)
	}
}
