package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Defaults of Options.
const (
	DefaultMaxRetries    = 2
	DefaultMaxRetryAfter = 5 * time.Second
	DefaultBatchSize     = defaultBatchMaxKeys
	DefaultMaxValueSize  = 64 << 20
)

// Errors, matched with errors.Is; every error the client returns wraps
// one of them or the context's error. A key that is not found is not an
// error.
var (
	// ErrNoDB: the server knows no such db (404 without a version).
	ErrNoDB = errors.New("client: no such db")
	// ErrGone: the pinned version is not held (410).
	ErrGone = errors.New("client: version not held")
	// ErrOverloaded: the server shed the request (503), still after the
	// retries allowed.
	ErrOverloaded = errors.New("client: server overloaded")
	// ErrUnavailable: no replica could answer (502, 504, 421, 500).
	ErrUnavailable = errors.New("client: no replica answered")
	// ErrBadRequest: the server refused the request (400, 405, 413,
	// 414): a bug in the caller or the client, never worth retrying.
	ErrBadRequest = errors.New("client: request refused")
)

// StatusError is an answer other than a value or "not found".
type StatusError struct {
	Op     string // "GET" or "POST"
	URL    string
	Status int
	// Message is the server's text, trimmed.
	Message string
	// RetryAfter is what a 503 asked for, 0 otherwise.
	RetryAfter time.Duration
	kind       error
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s: %s %s: %d %s", e.kind, e.Op, e.URL, e.Status, e.Message)
}

// Unwrap makes errors.Is(err, ErrGone) and the like hold.
func (e *StatusError) Unwrap() error { return e.kind }

func kindOf(status int) error {
	switch status {
	case http.StatusNotFound:
		return ErrNoDB
	case http.StatusGone:
		return ErrGone
	case http.StatusServiceUnavailable:
		return ErrOverloaded
	case http.StatusBadRequest, http.StatusMethodNotAllowed, http.StatusRequestEntityTooLarge, http.StatusRequestURITooLong:
		return ErrBadRequest
	}
	return ErrUnavailable
}

// Options configure a Client. Zero values are the documented defaults.
type Options struct {
	// HTTPClient sends the requests (default: one of the Client's own,
	// with keep-alive connections to the server reused across calls
	// and no proxy from the environment).
	HTTPClient *http.Client
	// MaxRetries is how many times a request shed with 503 is sent again
	// after waiting its Retry-After (default DefaultMaxRetries; negative:
	// none).
	MaxRetries int
	// MaxRetryAfter caps one wait (default DefaultMaxRetryAfter). A wait
	// that would pass the context's deadline is not begun: the 503 is
	// returned at once.
	MaxRetryAfter time.Duration
	// BatchSize is the most keys MultiGet sends in one request (default
	// DefaultBatchSize, the servers' default limit); more are split.
	BatchSize int
	// MaxValueSize bounds an answer's body (default DefaultMaxValueSize).
	MaxValueSize int64
	// TLS is the client's TLS config for an https:// base (routerd with
	// [tls] app_tls, or a storaged with [tls]): RootCAs holding the
	// cluster's CA and, when the server requires one, a client
	// certificate. nil uses the system's roots. Ignored with a given
	// HTTPClient, whose transport decides.
	TLS *tls.Config
}

// Client reads from routerd (or one storaged) over HTTP. It is safe for
// concurrent use.
type Client struct {
	base string
	opts Options
	own  *http.Transport // closed by Close; nil with a given HTTPClient
}

// New returns a Client of the server at base, "http://host:port".
func New(base string, opts Options) (*Client, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return nil, fmt.Errorf("client: base %q is not http://host:port", base)
	}
	if opts.MaxRetries == 0 {
		opts.MaxRetries = DefaultMaxRetries
	}
	if opts.MaxRetryAfter <= 0 {
		opts.MaxRetryAfter = DefaultMaxRetryAfter
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = DefaultBatchSize
	}
	if opts.MaxValueSize <= 0 {
		opts.MaxValueSize = DefaultMaxValueSize
	}
	c := &Client{base: strings.TrimSuffix(base, "/"), opts: opts}
	if opts.HTTPClient == nil {
		c.own = &http.Transport{
			TLSClientConfig:     opts.TLS,
			Proxy:               nil,
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConnsPerHost: 64,
			IdleConnTimeout:     90 * time.Second,
		}
		c.opts.HTTPClient = &http.Client{Transport: c.own}
	}
	return c, nil
}

// Close closes the Client's idle connections.
func (c *Client) Close() {
	if c.own != nil {
		c.own.CloseIdleConnections()
	}
}

// Option changes one call.
type Option func(*call)

type call struct{ version string }

// Pin makes a call answer from version, as X-Sequins-Version does: the
// call fails with ErrGone when no replica holds it.
func Pin(version string) Option { return func(c *call) { c.version = version } }

// Value is the answer of Get.
type Value struct {
	// Found is false when the db has no such key; Value is then nil.
	Found bool
	Value []byte
	// Version is the version that answered.
	Version string
}

// Get looks up one key of db.
func (c *Client) Get(ctx context.Context, db string, key []byte, opts ...Option) (Value, error) {
	var cl call
	for _, o := range opts {
		o(&cl)
	}
	if len(key) == 0 {
		return Value{}, fmt.Errorf("%w: empty key", ErrBadRequest)
	}
	u := c.base + keyPath(db, key)
	status, hdr, body, err := c.do(ctx, http.MethodGet, u, nil, cl.version)
	if err != nil {
		return Value{}, err
	}
	v := Value{Version: hdr.Get(headerVersion)}
	switch {
	case status == http.StatusOK:
		v.Found, v.Value = true, body
		return v, nil
	case status == http.StatusNotFound && v.Version != "":
		return v, nil // the db exists, the key does not
	}
	return Value{}, statusError(http.MethodGet, u, status, hdr, body)
}

// do sends one request, again after a 503's Retry-After while retries
// and the context's deadline allow, and returns the last answer.
func (c *Client) do(ctx context.Context, method, u string, body []byte, version string) (int, http.Header, []byte, error) {
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
		if err != nil {
			return 0, nil, nil, fmt.Errorf("client: %w", err)
		}
		if body == nil {
			req.Body, req.GetBody, req.ContentLength = nil, nil, 0
		}
		if version != "" {
			req.Header[headerVersion] = []string{version}
		}
		resp, err := c.opts.HTTPClient.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return 0, nil, nil, fmt.Errorf("client: %s %s: %w", method, u, context.Cause(ctx))
			}
			return 0, nil, nil, fmt.Errorf("client: %s %s: %w: %w", method, u, ErrUnavailable, err)
		}
		b, err := io.ReadAll(io.LimitReader(resp.Body, c.opts.MaxValueSize+1))
		resp.Body.Close()
		if err != nil {
			if ctx.Err() != nil {
				return 0, nil, nil, fmt.Errorf("client: %s %s: %w", method, u, context.Cause(ctx))
			}
			return 0, nil, nil, fmt.Errorf("client: %s %s: reading the answer: %w: %w", method, u, ErrUnavailable, err)
		}
		if int64(len(b)) > c.opts.MaxValueSize {
			return 0, nil, nil, fmt.Errorf("client: %s %s: answer over %d bytes: %w", method, u, c.opts.MaxValueSize, ErrUnavailable)
		}
		if resp.StatusCode != http.StatusServiceUnavailable || attempt >= c.opts.MaxRetries {
			return resp.StatusCode, resp.Header, b, nil
		}
		wait := min(retryAfter(resp.Header), c.opts.MaxRetryAfter)
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			return resp.StatusCode, resp.Header, b, nil
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return 0, nil, nil, fmt.Errorf("client: %s %s: waiting to retry: %w", method, u, context.Cause(ctx))
		}
	}
}

// retryAfter reads Retry-After in seconds; 1s when absent or a date.
func retryAfter(h http.Header) time.Duration {
	if n, err := strconv.Atoi(strings.TrimSpace(h.Get("Retry-After"))); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	return time.Second
}

func statusError(op, u string, status int, h http.Header, body []byte) error {
	e := &StatusError{Op: op, URL: u, Status: status, kind: kindOf(status)}
	msg := string(body)
	if len(msg) > 200 {
		msg = msg[:200]
	}
	e.Message = strings.TrimSpace(msg)
	if status == http.StatusServiceUnavailable {
		e.RetryAfter = retryAfter(h)
	}
	return e
}
