package load

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"math"
	"net/http"
	"net/http/httptest"
	"runtime/metrics"
	"strings"
	"sync"
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

// TestHandshakesBeforeTheClock: connections are made, handshakes
// included, before the schedule starts, so that a slow handshake makes
// no open-loop request late: the run measures kept-alive connections.
func TestHandshakesBeforeTheClock(t *testing.T) {
	const handshake = 300 * time.Millisecond
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("0123456789"))
	}))
	srv.TLS = &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
		time.Sleep(handshake)
		return nil, nil
	}}
	srv.StartTLS()
	defer srv.Close()
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	addr := strings.TrimPrefix(srv.URL, "https://")
	began := time.Now()
	res, err := Run(context.Background(), Options{Addr: addr, Path: fixed("/db/k"), Conns: 4, Duration: 600 * time.Millisecond,
		Rate: 200, TLS: &tls.Config{RootCAs: pool}})
	if err != nil || res.Requests == 0 || res.Errors != 0 {
		t.Fatalf("%d requests, %d errors (%s), %v", res.Requests, res.Errors, res.FirstError, err)
	}
	if took := time.Since(began); took < handshake {
		t.Fatalf("the run took %v, less than one handshake: the server did not delay it", took)
	}
	if worst := res.Latencies[len(res.Latencies)-1]; worst >= handshake/2 {
		t.Fatalf("slowest request %v: the handshakes were inside the measured schedule", worst)
	}
}

// TestCollectsBeforeTheClock: the garbage of the handshakes is collected
// after the last handshake and before the first request, so that the
// generator's collector does not run in a TLS run's measured part for
// garbage a plaintext run does not make.
func TestCollectsBeforeTheClock(t *testing.T) {
	var mu sync.Mutex
	lastHandshake, firstRequest := uint64(0), uint64(math.MaxUint64)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := forcedCollections()
		mu.Lock()
		firstRequest = min(firstRequest, n)
		mu.Unlock()
		w.Write([]byte("0123456789"))
	}))
	srv.TLS = &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
		n := forcedCollections()
		mu.Lock()
		lastHandshake = max(lastHandshake, n)
		mu.Unlock()
		return nil, nil
	}}
	srv.StartTLS()
	defer srv.Close()
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	addr := strings.TrimPrefix(srv.URL, "https://")
	res, err := Run(context.Background(), Options{Addr: addr, Path: fixed("/db/k"), Conns: 4, Duration: 100 * time.Millisecond,
		Rate: 200, TLS: &tls.Config{RootCAs: pool}})
	if err != nil || res.Requests == 0 || res.Errors != 0 {
		t.Fatalf("%d requests, %d errors (%s), %v", res.Requests, res.Errors, res.FirstError, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if firstRequest <= lastHandshake {
		t.Fatalf("forced collections: %d at the last handshake, %d at the first request: none between them", lastHandshake, firstRequest)
	}
}

// forcedCollections counts the collections runtime.GC started.
func forcedCollections() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/forced:gc-cycles"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
