package main

import (
	"crypto/tls"
	"io"
	"log"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"spangle/shared/certgen"
)

// TestProbeOverMutualTLS: against a server requiring client
// certificates, the probe passes with -ca, -cert and -key, and fails
// without the client certificate or with another CA.
func TestProbeOverMutualTLS(t *testing.T) {
	dir := t.TempDir()
	if err := certgen.WriteSet(dir, certgen.SetOptions{Names: []string{"127.0.0.1"}}); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	if err := certgen.WriteSet(other, certgen.SetOptions{Names: []string{"127.0.0.1"}}); err != nil {
		t.Fatal(err)
	}
	srvCfg, err := tlsConfig(filepath.Join(dir, certgen.CAFile), filepath.Join(dir, certgen.PeerFile), filepath.Join(dir, certgen.PeerKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	srvCfg.ClientAuth = tls.RequireAndVerifyClientCert
	srvCfg.ClientCAs = srvCfg.RootCAs
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{ErrorLog: log.New(io.Discard, "", 0), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
			http.Error(w, "no client certificate", http.StatusForbidden)
		}
	})}
	go hs.Serve(tls.NewListener(l, srvCfg))
	defer hs.Close()
	url := "https://" + l.Addr().String() + "/healthz"

	ok, err := tlsConfig(filepath.Join(dir, certgen.CAFile), filepath.Join(dir, certgen.ClientFile), filepath.Join(dir, certgen.ClientKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := probe(url, ok, 5*time.Second); err != nil {
		t.Fatalf("probe with the client certificate: %v", err)
	}
	noCert, err := tlsConfig(filepath.Join(dir, certgen.CAFile), "", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := probe(url, noCert, 5*time.Second); err == nil {
		t.Error("probe without a client certificate passed")
	}
	wrongCA, err := tlsConfig(filepath.Join(other, certgen.CAFile), filepath.Join(other, certgen.ClientFile), filepath.Join(other, certgen.ClientKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := probe(url, wrongCA, 5*time.Second); err == nil || !strings.Contains(err.Error(), "unknown authority") {
		t.Errorf("probe trusting another CA: %v", err)
	}
	if _, err := tlsConfig("", filepath.Join(dir, certgen.ClientFile), filepath.Join(dir, certgen.ClientKeyFile)); err == nil {
		t.Error("-cert without -ca accepted")
	}
	if _, err := tlsConfig(filepath.Join(dir, certgen.CAFile), filepath.Join(dir, certgen.ClientFile), ""); err == nil {
		t.Error("-cert without -key accepted")
	}
}
