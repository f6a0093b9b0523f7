package peers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"time"
)

// Trivial returns a handler that answers every request 200 with body, as
// little as net/http allows, with the Content-Type storaged sends.
func Trivial(body []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(body)
	})
}

// TrivialBody is the constant body of size n the trivial server sends.
func TrivialBody(n int) []byte { return bytes.Repeat([]byte("x"), n) }

// ReverseProxy returns a plain httputil.ReverseProxy to target
// (http://host:port) with a transport that keeps enough idle connections
// for the benchmark's concurrency, as anyone deploying one would set it.
func ReverseProxy(target string) (http.Handler, error) {
	u, err := url.Parse(target)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return nil, fmt.Errorf("peers: target %q is not http://host:port", target)
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(u) },
		Transport: &http.Transport{
			Proxy:               nil,
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:        1024,
			MaxIdleConnsPerHost: 1024,
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true,
		},
	}
	return rp, nil
}

// Serve serves h on addr until ctx ends.
func Serve(ctx context.Context, addr string, h http.Handler) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("peers: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("peers: %w", err)
	}
	return nil
}
