package proxy

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"spangle/shared/tlsconfig"
	"spangle/shared/tlstest"
)

// BenchmarkHTTPUpstreamGet is one lookup through HTTPUpstream to a
// storaged-like server in this process, in plaintext and over mutual TLS
// (the cluster's certificates, as in the bench's TLS section): client and
// server costs together, so the difference is what TLS adds to a hop.
func BenchmarkHTTPUpstreamGet(b *testing.B) {
	value := make([]byte, 100)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd["X-Sequins-Version"] = []string{"v1"}
		hd["Content-Type"] = []string{"application/octet-stream"}
		hd["Content-Length"] = []string{"100"}
		w.Write(value)
	})
	for _, mode := range []string{"plain", "tls"} {
		b.Run(mode, func(b *testing.B) {
			var srvTLS, cliTLS *tlsconfig.Source
			if mode == "tls" {
				set := tlstest.New(b)
				var err error
				if srvTLS, err = tlsconfig.New(tlsconfig.Options{Settings: set.Peer("require")}); err != nil {
					b.Fatal(err)
				}
				if cliTLS, err = tlsconfig.New(tlsconfig.Options{Settings: set.Client()}); err != nil {
					b.Fatal(err)
				}
			}
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
			go hs.Serve(srvTLS.Listen(l))
			defer hs.Close()
			u := NewHTTPUpstream(HTTPOptions{TLS: cliTLS})
			defer u.CloseIdleConnections()
			addr := l.Addr().String()
			req := &Request{DB: "db", Version: "v1", Key: []byte("some-key")}
			b.ReportAllocs()
			b.SetParallelism(4)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					resp, err := u.Get(context.Background(), addr, req)
					if err != nil || resp.Status != 200 {
						b.Fatalf("%v %+v", err, resp)
					}
				}
			})
		})
	}
}
