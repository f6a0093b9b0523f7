package tlsconfig

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"time"
)

// Scheme is the URL scheme of requests to the cluster's servers: https
// with TLS, http for a nil Source.
func (s *Source) Scheme() string {
	if s == nil {
		return "http"
	}
	return "https"
}

// DialTLS returns a DialTLSContext for http.Transport: it connects with
// d, hands the connection a ClientConfig for the host dialled and
// completes the handshake within d.Timeout (when set) or ctx.
func (s *Source) DialTLS(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("tlsconfig: %w", err)
		}
		raw, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		hctx := ctx
		if d.Timeout > 0 {
			var cancel context.CancelFunc
			hctx, cancel = context.WithTimeout(ctx, d.Timeout)
			defer cancel()
		}
		c := tls.Client(raw, s.clientConfig(host, addr))
		if err := c.HandshakeContext(hctx); err != nil {
			raw.Close()
			return nil, fmt.Errorf("tlsconfig: TLS handshake with %s: %w", addr, err)
		}
		return c, nil
	}
}

// Apply makes t speak TLS with the Source's certificates to https URLs
// (a no-op for a nil Source) and returns t.
func (s *Source) Apply(t *http.Transport, d *net.Dialer) *http.Transport {
	if s != nil {
		t.DialTLSContext = s.DialTLS(d)
	}
	return t
}

// NewTransport is a keep-alive transport for the cluster's own requests
// (peer copies, ELECT, status polls): no proxy from the environment, and
// TLS as the Source says.
func (s *Source) NewTransport() *http.Transport {
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	return s.Apply(&http.Transport{
		Proxy:               nil,
		DialContext:         d.DialContext,
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     90 * time.Second,
	}, d)
}

// Static builds a fixed client config from files, for one-shot tools
// (the spangle CLI) and apps that rotate nothing: RootCAs from ca_file,
// the certificate from cert_file and key_file when set, crypto/tls's own
// verification. nil, nil when the settings configure no TLS.
func Static(st Settings, now time.Time) (*tls.Config, error) {
	if !st.Enabled() {
		return nil, nil
	}
	if err := st.Validate(false); err != nil {
		return nil, err
	}
	f, _, err := readFiles(st)
	if err != nil {
		return nil, err
	}
	b, err := parse(st, f, now)
	if err != nil {
		return nil, err
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: b.pool}
	if b.cert != nil {
		c.Certificates = []tls.Certificate{*b.cert}
	}
	return c, nil
}

// Probe dials addr (host:port) and makes one TLS handshake with it as
// the cluster's clients do, then hangs up: nil when the server's
// certificate is accepted for host (or a peer_names identity), an error
// wrapping ErrPeerRefused when it is refused, another error when addr
// cannot be reached or speaks no TLS. routerd probes a node once before
// its partitions count.
func (s *Source) Probe(ctx context.Context, addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("tlsconfig: %w", err)
	}
	d := &net.Dialer{Timeout: 5 * time.Second}
	raw, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("tlsconfig: %w", err)
	}
	defer raw.Close()
	hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn := tls.Client(raw, s.clientConfig(host, addr))
	if err := conn.HandshakeContext(hctx); err != nil {
		return fmt.Errorf("tlsconfig: handshake with %s: %w", addr, err)
	}
	return conn.Close()
}
