package proxy

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"spangle/routerd/health"
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

// BenchmarkDoHTTP is one lookup through Proxy.Do and HTTPUpstream, from a
// context that can be cancelled (as a server's request context), to a
// node in this process that answers every request with the same bytes at
// once: routerd's side of an uncached GET's upstream hop, with its
// socket work, and little of the node's.
func BenchmarkDoHTTP(b *testing.B) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	answer := []byte("HTTP/1.1 200 OK\r\nX-Sequins-Version: v1\r\nContent-Type: application/octet-stream\r\nContent-Length: 100\r\n\r\n" + strings.Repeat("v", 100))
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 4<<10)
				n := 0
				for {
					m, err := c.Read(buf[n:])
					if err != nil {
						return
					}
					n += m
					for {
						i := bytes.Index(buf[:n], []byte("\r\n\r\n"))
						if i < 0 {
							break
						}
						if _, err := c.Write(answer); err != nil {
							return
						}
						n = copy(buf, buf[i+4:n])
					}
				}
			}()
		}
	}()
	u := NewHTTPUpstream(HTTPOptions{})
	defer u.Close()
	// A long timeout: a loaded machine stalls a lookup past the default.
	p, err := New(Options{Upstream: u, Health: health.New(health.Options{}), Timeout: 10 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req := &Request{DB: "db", Version: "v1", Key: []byte("some-key"), Replicas: []string{l.Addr().String()}}
	b.ReportAllocs()
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := p.Do(ctx, req)
			if err != nil || resp.Status != 200 {
				b.Fatalf("%v %+v", err, resp)
			}
		}
	})
}
