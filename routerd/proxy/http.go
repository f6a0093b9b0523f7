package proxy

import (
	"context"
	"errors"
	"net"
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
	// OnDial, when set, is told of every connection dialled to a node,
	// TLS handshake included: err is nil when it was made. New
	// connections should be rare (they are kept alive); an operator
	// counts them (spangle_routerd_upstream_dials_total).
	OnDial func(err error)
}

// HTTPUpstream asks storaged nodes over HTTP/1.1 with keep-alive, on
// connections of its own (conn.go): single GETs and batch lookups alike.
// It is safe for concurrent use.
type HTTPUpstream struct {
	gets     *getConns // batches, and single GETs once closed
	pipes    *pipes    // single GETs, pipelined (pipe.go)
	maxValue int64
}

// NewHTTPUpstream returns an upstream with its own connection pool. It
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
	if on := opts.OnDial; on != nil {
		inner := dial
		dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := inner(ctx, network, addr)
			on(err)
			return c, err
		}
	}
	return &HTTPUpstream{
		gets:     newGetConns(dial, opts.MaxIdleConnsPerHost, idleConnTimeout),
		pipes:    newPipes(dial, opts.MaxIdleConnsPerHost, idleConnTimeout, opts.MaxValueSize),
		maxValue: opts.MaxValueSize,
	}
}

// idleConnTimeout: a connection idle longer is closed, not reused.
const idleConnTimeout = 90 * time.Second

// CloseIdleConnections closes the pooled connections that carry no
// request.
func (u *HTTPUpstream) CloseIdleConnections() {
	u.gets.closeIdle()
	u.pipes.closeIdle()
}

// Close is for shutdown: it closes the pooled connections (single GETs
// still waiting on a pipelined one fail), and those that go back to the
// pool later (a late answer drained, a dial that outlived its request)
// are closed too. Lookups may still be made, each on a connection of its
// own that is not kept.
func (u *HTTPUpstream) Close() {
	u.gets.close()
	u.pipes.close()
}

// Get implements Upstream: GET http(s)://<addr>/<db>/<escaped key> pinned
// to req.Version. addr must be a registered node address.
func (u *HTTPUpstream) Get(ctx context.Context, addr string, req *Request) (*Response, error) {
	if req.Keys != nil {
		return u.post(ctx, addr, req)
	}
	if !validHeaderValue(req.Version) {
		return nil, errHeaderValue
	}
	path := wire.KeyPath(req.DB, req.Key)
	resp, err := u.pipes.get(ctx, addr, path, req.Version)
	if errors.Is(err, errPipesClosed) {
		return u.gets.get(ctx, addr, path, req.Version, nil, u.maxValue)
	}
	return resp, err
}
