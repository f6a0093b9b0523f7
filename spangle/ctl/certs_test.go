package ctl

import (
	"bytes"
	"crypto/tls"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"spangle/shared/certgen"
	"spangle/shared/tlsconfig"
)

// TestCertsAndStatusOverTLS: spangle certs writes a set that the
// daemons' [tls] accepts, with keys readable by their owner only, and
// spangle status reads a server over mutual TLS with it.
func TestCertsAndStatusOverTLS(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	var out, errOut bytes.Buffer
	if code := Main([]string{"certs", "--out", dir, "--names", "127.0.0.1,localhost,spiffe://spangle.test/storaged"}, &out, &errOut); code != 0 {
		t.Fatalf("certs: %d %s", code, errOut.String())
	}
	for _, f := range []string{certgen.CAKeyFile, certgen.PeerKeyFile, certgen.ClientKeyFile} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v, want mode 0600", f, fi.Mode(), err)
		}
	}
	peer := tlsconfig.Settings{CertFile: filepath.Join(dir, certgen.PeerFile), KeyFile: filepath.Join(dir, certgen.PeerKeyFile),
		CAFile: filepath.Join(dir, certgen.CAFile), PeerNames: []string{"spiffe://spangle.test/*"}}
	src, err := tlsconfig.New(tlsconfig.Options{Settings: peer})
	if err != nil {
		t.Fatalf("the peer set is refused: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{ErrorLog: log.New(io.Discard, "", 0), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"dbs":{"db":{"current_version":"v1"}}}`)
	})}
	go hs.Serve(tls.NewListener(l, src.ServerConfig()))
	defer hs.Close()
	addr := l.Addr().String()
	out.Reset()
	args := []string{"status", "--addr", addr, "--tls-ca", peer.CAFile,
		"--tls-cert", filepath.Join(dir, certgen.ClientFile), "--tls-key", filepath.Join(dir, certgen.ClientKeyFile)}
	if code := Main(args, &out, &errOut); code != 0 || !strings.Contains(out.String(), "db\tserving v1") {
		t.Fatalf("status over TLS: %d %q %s", code, out.String(), errOut.String())
	}
	// Without a client certificate the server refuses the handshake.
	errOut.Reset()
	if code := Main([]string{"status", "--addr", addr, "--tls-ca", peer.CAFile, "--timeout", "5s"}, &out, &errOut); code != 1 {
		t.Fatalf("status without a client certificate: %d %s", code, errOut.String())
	}
	// A key without its certificate is bad usage.
	if code := Main([]string{"status", "--addr", addr, "--tls-key", peer.KeyFile}, &out, &errOut); code != 2 {
		t.Fatalf("--tls-key alone: %d", code)
	}
	if code := Main([]string{"certs", "--out", dir}, &out, &errOut); code != 2 {
		t.Fatalf("certs without --names: %d", code)
	}
}
