package load

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestTLS: with Options.TLS every connection is TLS (one handshake each,
// kept alive) and the server's certificate is verified for the host.
func TestTLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil {
			http.Error(w, "plaintext", 400)
			return
		}
		w.Write([]byte("0123456789"))
	}))
	defer srv.Close()
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	addr := strings.TrimPrefix(srv.URL, "https://")
	res, err := Run(context.Background(), Options{Addr: addr, Path: fixed("/db/k"), Conns: 2, Duration: 200 * time.Millisecond,
		TLS: &tls.Config{RootCAs: pool}})
	if err != nil || res.Requests == 0 || res.Errors != 0 {
		t.Fatalf("%+v %v", res.Errors, err)
	}
	// An unknown server certificate: every request fails, clearly.
	res, err = Run(context.Background(), Options{Addr: addr, Path: fixed("/db/k"), Conns: 1, Duration: 100 * time.Millisecond,
		TLS: &tls.Config{}})
	if err != nil || res.Requests != 0 || !strings.Contains(res.FirstError, "TLS handshake") {
		t.Fatalf("unknown CA: %d requests, first error %q, %v", res.Requests, res.FirstError, err)
	}
}
