package tlsconfig

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"spangle/shared/wait"
)

// DefaultInterval is how often Run looks at the files: certificates
// rotated hourly (cert-manager, Vault, SPIRE) are picked up well before
// the old ones expire.
const DefaultInterval = 10 * time.Second

// Options configure a Source. Zero values are the documented defaults.
type Options struct {
	Settings Settings
	// Log defaults to no logging.
	Log *zap.Logger
	// Registerer receives the metrics (spangle_tls_*); nil registers
	// nowhere.
	Registerer prometheus.Registerer
	// Interval between looks at the files; default DefaultInterval.
	Interval time.Duration
	// Now defaults to time.Now (tests move the clock).
	Now func() time.Time
}

// Source holds the current certificate, key and CA pool and hands out
// configs that always use them. It is safe for concurrent use.
type Source struct {
	settings Settings
	log      *zap.Logger
	interval time.Duration
	now      func() time.Time
	metrics  *metrics
	cur      atomic.Pointer[bundle]
	sessions tls.ClientSessionCache // shared by every client config: resumption
	server   *tls.Config            // built once; its callbacks read cur

	mu       sync.Mutex        // serializes Reload
	seen     [sha256.Size]byte // guarded by mu; the contents last tried
	seenErr  string            // guarded by mu; the read error last logged
	refused  error             // guarded by mu; why the contents last tried were refused
	refusals *onceSet          // which refused peers were logged
}

// New reads and validates the files of o.Settings and returns a Source
// serving them; Run keeps them current. It returns nil (plaintext) when
// the settings configure no TLS. An error names the file at fault.
func New(o Options) (*Source, error) {
	if !o.Settings.Enabled() {
		return nil, nil
	}
	if err := o.Settings.Validate(false); err != nil {
		return nil, err
	}
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	s := &Source{settings: o.Settings, log: o.Log, interval: o.Interval, now: o.Now,
		sessions: tls.NewLRUClientSessionCache(1024), refusals: newOnceSet(1024)}
	f, sum, err := readFiles(o.Settings)
	if err != nil {
		return nil, err
	}
	b, err := parse(o.Settings, f, o.Now())
	if err != nil {
		return nil, err
	}
	b.hash = sum
	s.seen = sum
	s.cur.Store(b)
	if fi, err := os.Stat(o.Settings.KeyFile); err == nil && fi.Mode().Perm()&0o077 != 0 {
		o.Log.Warn("tls: key_file is readable by others than its owner; chmod 600 it", zap.String("key_file", o.Settings.KeyFile),
			zap.Stringer("mode", fi.Mode().Perm()))
	}
	if s.metrics, err = newMetrics(o.Registerer, s); err != nil {
		return nil, err
	}
	s.server = &tls.Config{
		MinVersion:       tls.VersionTLS12,
		GetCertificate:   s.getCertificate,
		ClientAuth:       o.Settings.clientAuth(),
		VerifyConnection: s.verifyClient,
	}
	return s, nil
}

// Settings returns what the Source was made from.
func (s *Source) Settings() Settings {
	if s == nil {
		return Settings{}
	}
	return s.settings
}

// Run looks at the files every Interval until ctx ends, and swaps in a
// changed set once it is valid.
func (s *Source) Run(ctx context.Context) {
	if s == nil {
		return
	}
	wait.Every(ctx, s.interval, func(context.Context) { _ = s.Reload() })
}

// ErrRefused marks a changed set that failed validation; the old set
// keeps serving.
var ErrRefused = errors.New("tlsconfig: new certificate set refused; the old one keeps serving")

// Reload reads the files now and swaps them in if they changed and are
// valid. It returns nil when nothing changed or the swap was made, and
// an error wrapping ErrRefused when a changed set was refused (logged
// and counted once per content).
func (s *Source) Reload() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f, sum, err := readFiles(s.settings)
	if err != nil {
		// A file being replaced may be missing for a moment: log a
		// changed error once, count it, keep the old set.
		if err.Error() != s.seenErr {
			s.seenErr = err.Error()
			s.metrics.reloads.WithLabelValues("refused").Inc()
			s.log.Warn("tls: cannot read the certificate files; the old set keeps serving", zap.Error(err))
		}
		return fmt.Errorf("%w: %w", ErrRefused, err)
	}
	s.seenErr = ""
	if sum == s.seen {
		if sum == s.cur.Load().hash {
			return nil
		}
		return s.refused // refused before, unchanged since: the same reason
	}
	s.seen = sum
	b, err := parse(s.settings, f, s.now())
	if err != nil {
		s.metrics.reloads.WithLabelValues("refused").Inc()
		s.log.Warn("tls: new certificate set refused; the old one keeps serving", zap.Error(err))
		s.refused = fmt.Errorf("%w: %w", ErrRefused, err)
		return s.refused
	}
	b.hash = sum
	s.cur.Store(b)
	s.metrics.reloads.WithLabelValues("ok").Inc()
	fields := []zap.Field{zap.String("ca_file", s.settings.CAFile)}
	if b.leaf != nil {
		fields = append(fields, zap.String("cert_file", s.settings.CertFile), zap.Time("not_after", b.leaf.NotAfter),
			zap.Strings("identities", Identities(b.leaf)))
	}
	s.log.Info("tls: certificate set reloaded", fields...)
	return nil
}

// NotAfter is when the certificate served now expires; zero without
// one.
func (s *Source) NotAfter() time.Time {
	if s == nil {
		return time.Time{}
	}
	if b := s.cur.Load(); b.leaf != nil {
		return b.leaf.NotAfter
	}
	return time.Time{}
}

// errNoCert is returned to a handshake when no certificate is configured.
var errNoCertConfigured = errors.New("tlsconfig: no certificate configured (cert_file)")

func (s *Source) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if b := s.cur.Load(); b.cert != nil {
		return b.cert, nil
	}
	return nil, errNoCertConfigured
}

func (s *Source) getClientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	if b := s.cur.Load(); b.cert != nil {
		return b.cert, nil
	}
	return &tls.Certificate{}, nil // none: the server decides
}

// ServerConfig is the config of a TLS listener: the current certificate,
// client certificates asked for as client_auth says and verified against
// the current CA. nil for a nil Source (plaintext).
func (s *Source) ServerConfig() *tls.Config {
	if s == nil {
		return nil
	}
	return s.server
}
