package integration

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"spangle/routerd/config"
	"spangle/shared/certgen"
	"spangle/shared/proctest"
	"spangle/shared/tlsconfig"
	"spangle/shared/tlstest"
	"spangle/shared/topo"
	"spangle/shared/topo/zktopo"
	"spangle/shared/wire"
	"spangle/shared/zktest"
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

// TestZooKeeperRogueNodeNeverCounts: through ZooKeeper discovery with
// TLS on, a node that registers (anyone with the ZooKeeper credential
// can) but presents a certificate of another CA is never counted: a new
// version whose only replica of some partitions is that node is not
// served, the node is not listed, and reads keep being answered by the
// good node. Once a good node holds those partitions too, the version is
// served.
func TestZooKeeperRogueNodeNeverCounts(t *testing.T) {
	set := tlstest.New(t)
	zks := zktest.Start(t)
	src := source(t, "v1")
	good := startTLSStoraged(t, set, src, set.CertFile, set.KeyFile, set.CAFile)
	rogue := func() *storaged {
		c, k, ca := set.OtherCA(t, certgen.Request{Names: []string{"127.0.0.1", tlstest.PeerName}})
		return startTLSStoraged(t, set, src, c, k, ca)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	opts := zktopo.Options{Servers: []string{zks.Addr()}, Cluster: "rt", SessionTimeout: 5 * time.Second}
	all := make([]int, testParts)
	for p := range all {
		all[p] = p
	}
	register(ctx, t, opts, good.addr, all)

	cfg := config.Default()
	cfg.ZK.Servers = []string{zks.Addr()}
	cfg.Sharding.ClusterName = "rt"
	cfg.ZK.SessionTimeout = 5 * time.Second
	cfg.CacheSize = 0
	cfg.TLS = set.Client()
	rd := startRouterd(t, cfg, nil, testDB)
	rd.waitServed(t, testDB, "v1", 30*time.Second)

	// v2 in the source, loaded beside v1 (kept for the requests of
	// those that serve it).
	writeVersion(t, src, testDB, "v2", testParts, testKeys)
	good.Signal(syscall.SIGHUP)
	waitNodeServes(t, set, good, "v2")
	// In ZooKeeper the good node holds v2's even partitions, the rogue
	// every one.
	var even []int
	for p := 0; p < testParts; p += 2 {
		even = append(even, p)
	}
	registerVersion(ctx, t, opts, good.addr, "v2", even)
	registerVersion(ctx, t, opts, rogue.addr, "v2", all)
	served := func() string { return rd.r.Server().Status(testDB).DBs[testDB].Served }
	deadline := time.Now().Add(20 * time.Second)
	for rd.metric(t, `spangle_tls_handshakes_refused_total{peer="server"}`) < 1 {
		if v := served(); v != "v1" {
			t.Fatalf("serving %s while v2's odd partitions have only a rogue replica", v)
		}
		if time.Now().After(deadline) {
			t.Fatal("routerd never tried the rogue node's certificate")
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(time.Second) // room for a wrong switch
	if v := served(); v != "v1" {
		t.Fatalf("serving %s while v2's odd partitions have only a rogue replica", v)
	}
	if n := rd.metric(t, "spangle_routerd_nodes_unverified"); n != 1 {
		t.Fatalf("unverified nodes %v, want the rogue", n)
	}
	client := &http.Client{Transport: &http.Transport{Proxy: nil}}
	defer client.CloseIdleConnections()
	for i := 0; i < 100; i += 3 {
		key := keyName(i)
		if code, body, hdr, _ := get(t, client, rd.base+wire.KeyPath(testDB, []byte(key))); code != 200 || body != valueOf("v1", key) || hdr.Get(wire.HeaderProxiedTo) != good.addr {
			t.Fatalf("%s: %d %q from %q; status %+v", key, code, body, hdr.Get(wire.HeaderProxiedTo), rd.r.Server().Status(testDB).DBs[testDB])
		}
	}
	// The good node takes the odd partitions too: v2 is served, by it.
	var odd []int
	for p := 1; p < testParts; p += 2 {
		odd = append(odd, p)
	}
	registerVersion(ctx, t, opts, good.addr, "v2", odd)
	rd.waitServed(t, testDB, "v2", 30*time.Second)
	for i := 0; i < 100; i += 3 {
		key := keyName(i)
		if code, body, hdr, _ := get(t, client, rd.base+wire.KeyPath(testDB, []byte(key))); code != 200 || body != valueOf("v2", key) || hdr.Get(wire.HeaderProxiedTo) != good.addr {
			t.Fatalf("%s on v2: %d %q from %q", key, code, body, hdr.Get(wire.HeaderProxiedTo))
		}
	}
}

// waitNodeServes waits until the TLS storaged n answers a key from
// version (pinned by header).
func waitNodeServes(t *testing.T, set *tlstest.Set, n *storaged, version string) {
	t.Helper()
	src, err := tlsconfig.New(tlsconfig.Options{Settings: set.Client()})
	if err != nil {
		t.Fatal(err)
	}
	tr := src.NewTransport()
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: time.Second}
	key := keyName(1)
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body, _, _ := get(t, client, "https://"+n.addr+wire.KeyPath(testDB, []byte(key)), wire.HeaderVersion, version)
		if code == 200 && body == valueOf(version, key) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never served %s: %d %q", n.addr, version, code, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
