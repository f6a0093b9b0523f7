package proxy

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"spangle/shared/tlsconfig"
	"spangle/shared/wire"
)

// Defaults of HTTPOptions.
const (
	DefaultMaxIdleConnsPerHost = 1024
	DefaultDialTimeout         = time.Second
	DefaultMaxValueSize        = 64 << 20
)

// HTTPOptions configure an HTTPUpstream. Zero values are the documented
// defaults.
type HTTPOptions struct {
	// MaxIdleConnsPerHost is the keep-alive pool per storaged node
	// (default DefaultMaxIdleConnsPerHost): routerd talks to few hosts
	// at high rates, far above net/http's default of 2.
	MaxIdleConnsPerHost int
	// DialTimeout bounds connecting to a node (default
	// DefaultDialTimeout); the lookup's own deadline usually ends first.
	DialTimeout time.Duration
	// MaxValueSize bounds a value read from a node (default
	// DefaultMaxValueSize); larger answers count as failures.
	MaxValueSize int64
	// TLS, when not nil, makes every request https with the cluster's
	// certificates; a node whose certificate fails verification (not
	// from the CA, not for the address it registered nor a peer name)
	// fails like an unreachable one. nil is plaintext.
	TLS *tlsconfig.Source
}

// HTTPUpstream asks storaged nodes over HTTP/1.1 with keep-alive: a
// single GET on connections of its own (conn.go), a batch through an
// http.Transport. It is safe for concurrent use.
type HTTPUpstream struct {
	rt       *http.Transport // batch lookups
	gets     *getConns       // single GETs
	maxValue int64
	scheme   string
}

// NewHTTPUpstream returns an upstream with its own tuned transport. It
// never uses a proxy from the environment and never follows redirects.
func NewHTTPUpstream(opts HTTPOptions) *HTTPUpstream {
	if opts.MaxIdleConnsPerHost <= 0 {
		opts.MaxIdleConnsPerHost = DefaultMaxIdleConnsPerHost
	}
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = DefaultDialTimeout
	}
	if opts.MaxValueSize <= 0 {
		opts.MaxValueSize = DefaultMaxValueSize
	}
	d := &net.Dialer{Timeout: opts.DialTimeout, KeepAlive: 30 * time.Second}
	dial := d.DialContext
	if opts.TLS != nil {
		dial = opts.TLS.DialTLS(d)
	}
	return &HTTPUpstream{
		gets: newGetConns(dial, opts.MaxIdleConnsPerHost, idleConnTimeout),
		rt: opts.TLS.Apply(&http.Transport{
			Proxy:               nil,
			DialContext:         d.DialContext,
			MaxIdleConns:        0, // no global bound; per host below
			MaxIdleConnsPerHost: opts.MaxIdleConnsPerHost,
			IdleConnTimeout:     idleConnTimeout,
			DisableCompression:  true,
			ForceAttemptHTTP2:   false,
		}, d),
		maxValue: opts.MaxValueSize,
		scheme:   opts.TLS.Scheme(),
	}
}

// idleConnTimeout: a connection idle longer is closed, not reused.
const idleConnTimeout = 90 * time.Second

// CloseIdleConnections closes the pooled connections.
func (u *HTTPUpstream) CloseIdleConnections() {
	u.rt.CloseIdleConnections()
	u.gets.closeIdle()
}

// Close is for shutdown: it closes the pooled connections, and those of
// single GETs that go back to the pool later (a late answer drained, a
// dial that outlived its request) are closed too. Lookups may still be
// made; their connections are not kept.
func (u *HTTPUpstream) Close() {
	u.rt.CloseIdleConnections()
	u.gets.close()
}

// Get implements Upstream: GET http(s)://<addr>/<db>/<escaped key> pinned
// to req.Version. addr must be a registered node address.
func (u *HTTPUpstream) Get(ctx context.Context, addr string, req *Request) (*Response, error) {
	if req.Keys != nil {
		return u.post(ctx, addr, req)
	}
	return u.gets.get(ctx, addr, wire.KeyPath(req.DB, req.Key), req.Version, u.maxValue)
}

// read takes an answer's status, headers and, for a 200, its body.
func (u *HTTPUpstream) read(addr string, res *http.Response) (*Response, error) {
	out := &Response{
		Status:       res.StatusCode,
		ContentType:  res.Header.Get("Content-Type"),
		LastModified: res.Header.Get("Last-Modified"),
		Version:      res.Header.Get(wire.HeaderVersion),
		RetryAfter:   res.Header.Get("Retry-After"),
	}
	if res.StatusCode != http.StatusOK {
		// Drain a little so the connection can be reused.
		_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 4<<10))
		return out, nil
	}
	switch n := res.ContentLength; {
	case n > u.maxValue:
		return nil, fmt.Errorf("proxy: %s: value of %d bytes over the limit", addr, n)
	case n >= 0:
		out.Body = make([]byte, n)
		if _, err := io.ReadFull(res.Body, out.Body); err != nil {
			return nil, fmt.Errorf("proxy: reading value from %s: %w", addr, err)
		}
	default:
		b, err := io.ReadAll(io.LimitReader(res.Body, u.maxValue+1))
		if err != nil {
			return nil, fmt.Errorf("proxy: reading value from %s: %w", addr, err)
		}
		if int64(len(b)) > u.maxValue {
			return nil, fmt.Errorf("proxy: %s: value over the limit", addr)
		}
		out.Body = b
	}
	return out, nil
}
