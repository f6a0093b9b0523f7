package proxy

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"spangle/shared/tlsconfig"
)

func TestHTTPUpstream(t *testing.T) {
	var gotPath, gotVersion string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotPath, gotVersion = r.URL.EscapedPath(), r.Header.Get("X-Sequins-Version")
		switch {
		case strings.HasSuffix(gotPath, "/shed"):
			w.Header().Set("Retry-After", "3")
			w.WriteHeader(503)
		case strings.HasSuffix(gotPath, "/redirect"):
			http.Redirect(w, r, "http://example.invalid/", http.StatusFound)
		case strings.HasSuffix(gotPath, "/huge"):
			w.Write(make([]byte, 2048))
		default:
			w.Header().Set("X-Sequins-Version", gotVersion)
			w.Header().Set("Content-Type", "text/plain")
			w.Write([]byte("value"))
		}
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	u := NewHTTPUpstream(HTTPOptions{MaxValueSize: 1024})
	defer u.CloseIdleConnections()
	ctx := context.Background()

	resp, err := u.Get(ctx, addr, &Request{DB: "db", Version: "v7", Key: []byte("a/b c%d?e#f")})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != 200 || string(resp.Body) != "value" || resp.Version != "v7" || resp.ContentType != "text/plain" {
		t.Fatalf("resp %+v", resp)
	}
	if gotPath != "/db/a%2Fb%20c%25d%3Fe%23f" || gotVersion != "v7" {
		t.Fatalf("storaged saw path %q version %q", gotPath, gotVersion)
	}
	resp, err = u.Get(ctx, addr, &Request{DB: "db", Version: "v7", Key: []byte("shed")})
	if err != nil || resp.Status != 503 || resp.RetryAfter != "3" {
		t.Fatalf("shed: %v %+v", err, resp)
	}
	resp, err = u.Get(ctx, addr, &Request{DB: "db", Version: "v7", Key: []byte("redirect")})
	if err != nil || resp.Status != http.StatusFound {
		t.Fatalf("a redirect must be returned, not followed: %v %+v", err, resp)
	}
	if _, err := u.Get(ctx, addr, &Request{DB: "db", Version: "v7", Key: []byte("huge")}); err == nil {
		t.Fatal("value over the limit accepted")
	}

	// A dead address fails fast.
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := l.Addr().String()
	l.Close()
	start := time.Now()
	if _, err := u.Get(ctx, dead, &Request{DB: "db", Version: "v", Key: []byte("k")}); err == nil {
		t.Fatal("no error from a closed port")
	}
	if time.Since(start) > time.Second {
		t.Fatal("refused connection took over a second")
	}
}

func TestHTTPUpstreamIgnoresEnvProxy(t *testing.T) {
	t.Setenv("HTTP_PROXY", "http://127.0.0.1:1")
	t.Setenv("http_proxy", "http://127.0.0.1:1")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	defer srv.Close()
	u := NewHTTPUpstream(HTTPOptions{})
	defer u.CloseIdleConnections()
	resp, err := u.Get(context.Background(), strings.TrimPrefix(srv.URL, "http://"), &Request{DB: "d", Version: "v", Key: []byte("k")})
	if err != nil || string(resp.Body) != "ok" {
		t.Fatalf("%v %+v", err, resp)
	}
}

// OnDial hears of every connection dialled, TLS handshake included, and
// of each that failed; kept-alive connections are not dialled again.
func TestOnDialCountsDials(t *testing.T) {
	for _, mode := range []string{"plain", "tls"} {
		t.Run(mode, func(t *testing.T) {
			var srvTLS, cliTLS *tlsconfig.Source
			if mode == "tls" {
				srvTLS, cliTLS = tlsPair(t)
			}
			addr, conns := valueServer(t, srvTLS)
			var ok, failed atomic.Int64
			u := NewHTTPUpstream(HTTPOptions{TLS: cliTLS, OnDial: func(err error) {
				if err != nil {
					failed.Add(1)
					return
				}
				ok.Add(1)
			}})
			defer u.Close()
			for i := 0; i < 20; i++ {
				if _, err := u.Get(context.Background(), addr, &Request{DB: "db", Version: "v1", Key: []byte("k")}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := u.Get(context.Background(), addr, &Request{DB: "db", Version: "v1", Keys: [][]byte{[]byte("k")}}); err != nil {
				t.Fatal(err)
			}
			if ok.Load() != conns.Load() || ok.Load() != 2 || failed.Load() != 0 {
				t.Fatalf("dials counted: %d made, %d failed; the node accepted %d (want 2: the GETs' and the batch's)", ok.Load(), failed.Load(), conns.Load())
			}
			l, _ := net.Listen("tcp", "127.0.0.1:0")
			dead := l.Addr().String()
			l.Close()
			if _, err := u.Get(context.Background(), dead, &Request{DB: "db", Version: "v", Key: []byte("k")}); err == nil {
				t.Fatal("no error from a closed port")
			}
			if failed.Load() != 1 {
				t.Fatalf("failed dials counted %d, want 1", failed.Load())
			}
		})
	}
}

// valueServer answers every request with "value" at version v1, over
// TLS as tlsSrc says, and counts its connections.
func valueServer(t *testing.T, tlsSrc *tlsconfig.Source) (string, *atomic.Int64) {
	return countingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("X-Sequins-Version", "v1")
		w.Write([]byte("value"))
	}), tlsSrc)
}
