package clienttest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"spangle/client"
	"spangle/shared/proctest"
	"spangle/shared/tlsconfig"
	"spangle/shared/tlstest"
)

// TestTLS: the client takes a *tls.Config and reads from a storaged
// that serves mutual TLS; without the cluster's CA and a certificate it
// gets an error, not an answer.
func TestTLS(t *testing.T) {
	set := tlstest.New(t)
	root := t.TempDir()
	if err := writeVersion(root, "db", "v1", 2, testRecords()); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(t.TempDir(), "storaged.toml")
	body := fmt.Sprintf("[tls]\ncert_file = %q\nkey_file = %q\nca_file = %q\n", set.CertFile, set.KeyFile, set.CAFile)
	if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := proctest.FreeAddr(t)
	proctest.Start(t, storagedBin, "--config", conf, "--source", root, "--local-store", t.TempDir(), "--bind", addr)
	cfg, err := tlsconfig.Static(set.Client(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, "https://"+addr, client.Options{TLS: cfg})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		v, err := c.Get(ctx, "db", []byte("key-7"))
		if err == nil && v.Found && string(v.Value) == "value-7" {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("Get over TLS: %+v %v", v, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Without the CA: the server's certificate is unknown.
	plain := newClient(t, "https://"+addr, client.Options{})
	if _, err := plain.Get(ctx, "db", []byte("key-7")); err == nil {
		t.Fatal("a client without the cluster's CA read over TLS")
	}
	// With the CA but no certificate: storaged requires one.
	noCert, err := tlsconfig.Static(tlsconfig.Settings{CAFile: set.CAFile}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := newClient(t, "https://"+addr, client.Options{TLS: noCert}).Get(ctx, "db", []byte("key-7")); err == nil {
		t.Fatal("a client without a certificate read from client_auth = require")
	}
	var se *client.StatusError
	if _, err := newClient(t, "http://"+addr, client.Options{}).Get(ctx, "db", []byte("key-7")); !errors.As(err, &se) || se.Status != http.StatusBadRequest {
		t.Fatalf("plaintext on the TLS port: %v, want a 400", err)
	}
}
