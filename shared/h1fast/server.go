package h1fast

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"

	"spangle/shared/wire"
)

// Lookup answers one key lookup. r is reused from one lookup of a
// connection to the next: its Method (GET or HEAD), its Header (the
// first X-Sequins-Version only, under its canonical name) and its
// Context (Options.Context's values, never cancelled) are set, nothing
// else. t is the parsed path. w holds the answer until Lookup returns,
// then sends it whole; a HEAD's body is dropped, as net/http drops it.
// Lookup must not keep w or r after it returns.
type Lookup func(w http.ResponseWriter, r *http.Request, t wire.Target)

// Options configure a Server. Lookup and Fallback are required; zero
// values of the others are the defaults noted.
type Options struct {
	// Lookup answers the key lookups the fast path takes.
	Lookup Lookup
	// Fallback answers everything else, on net/http.
	Fallback http.Handler
	// Context is the lookups' context (values only: it is never
	// cancelled); default context.Background().
	Context context.Context
	// ReadHeaderTimeout bounds how long a request head (and, with TLS,
	// the handshake) may take to arrive, on both paths; default 5s.
	ReadHeaderTimeout time.Duration
	// IdleTimeout closes a connection silent this long between
	// requests, on both paths; default 2 minutes.
	IdleTimeout time.Duration
	// TLS serves key lookups on *tls.Conn connections too, after the
	// handshake; false hands them to net/http whole.
	TLS bool
	// Post, when its Handle is set, serves POSTs of /<db> (batch
	// lookups) on the fast path too.
	Post PostOptions
	// Log receives accept failures, and net/http's errors under
	// "http"; default no logging.
	Log *zap.Logger
}

// Server serves key lookups on its own connection loop and everything
// else on an http.Server. It is safe for concurrent use.
type Server struct {
	opts    Options
	hs      *http.Server
	handoff *handoff
	base    context.Context
	date    dateCache

	mu      sync.Mutex
	l       net.Listener   // guarded by mu; set by Serve
	conns   map[*conn]bool // guarded by mu; true while idle
	closing bool           // guarded by mu
	gone    chan struct{}  // closed when conns empties while closing
}

// New returns a Server; it serves nothing until Serve.
func New(opts Options) (*Server, error) {
	if opts.Lookup == nil || opts.Fallback == nil {
		return nil, errors.New("h1fast: Lookup and Fallback are required")
	}
	if opts.Context == nil {
		opts.Context = context.Background()
	}
	if opts.ReadHeaderTimeout <= 0 {
		opts.ReadHeaderTimeout = 5 * time.Second
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = 2 * time.Minute
	}
	if opts.Log == nil {
		opts.Log = zap.NewNop()
	}
	if opts.Post.MaxBytes <= 0 {
		opts.Post.MaxBytes = wire.DefaultBatchMaxBytes
	}
	s := &Server{opts: opts, base: context.WithoutCancel(opts.Context),
		handoff: &handoff{conns: make(chan net.Conn), done: make(chan struct{})},
		conns:   map[*conn]bool{}, gone: make(chan struct{})}
	s.hs = &http.Server{
		Handler:           opts.Fallback,
		ReadHeaderTimeout: opts.ReadHeaderTimeout,
		IdleTimeout:       opts.IdleTimeout,
		ErrorLog:          zap.NewStdLog(opts.Log.Named("http")),
	}
	if opts.TLS {
		s.hs.Handler = withTLSState(opts.Fallback)
		s.hs.ConnContext = tlsConnContext
	}
	return s, nil
}

// Serve accepts connections on l until l closes or Shutdown, serving key
// lookups itself and handing the other connections to net/http. It
// returns http.ErrServerClosed after Shutdown, otherwise why accepting
// ended; either way the caller then calls Shutdown to end the
// connections.
func (s *Server) Serve(l net.Listener) error {
	s.mu.Lock()
	if s.closing || s.l != nil {
		s.mu.Unlock()
		l.Close()
		return http.ErrServerClosed
	}
	s.l = l
	s.handoff.Listener = l
	s.mu.Unlock()
	go s.accept(l)
	return s.hs.Serve(s.handoff)
}

// Shutdown stops accepting, closes idle connections, and waits for the
// requests under way on both paths to be answered, or for ctx, when it
// closes what is left. It may be called before Serve, and more than once.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if !s.closing {
		s.closing = true
		for c, idle := range s.conns {
			if idle {
				c.c.Close()
			}
		}
		if len(s.conns) == 0 {
			close(s.gone)
		}
	}
	s.mu.Unlock()
	shut := make(chan error, 1)
	go func() { shut <- s.waitFast(ctx) }()
	// net/http closes the listener through handoff; this closes it
	// when net/http never served it (Shutdown racing Serve).
	err := s.hs.Shutdown(ctx)
	s.mu.Lock()
	l := s.l
	s.mu.Unlock()
	if l != nil {
		l.Close()
	}
	s.handoff.end(nil)
	if err := errors.Join(err, <-shut); err != nil {
		return fmt.Errorf("h1fast: shutting down: %w", err)
	}
	return nil
}

// handoff is the listener net/http serves: it yields the connections the
// fast path gave up on. Closing it closes the real listener.
type handoff struct {
	net.Listener // set by Serve before net/http calls a method of it
	conns        chan net.Conn
	once         sync.Once
	done         chan struct{} // closed by Close or when accepting failed
	err          error         // why accepting ended; written before done closes
}

func (h *handoff) Accept() (net.Conn, error) {
	select {
	case c := <-h.conns:
		return c, nil
	case <-h.done:
		if h.err != nil {
			return nil, h.err
		}
		return nil, net.ErrClosed
	}
}

func (h *handoff) Close() error {
	err := h.Listener.Close()
	h.end(nil)
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

func (h *handoff) end(err error) {
	h.once.Do(func() {
		h.err = err
		close(h.done)
	})
}

// give hands c to net/http, or closes it when net/http serves no more.
func (h *handoff) give(c net.Conn) {
	select {
	case h.conns <- c:
	case <-h.done:
		c.Close()
	}
}

// accept runs until the listener closes; a failure to accept other than
// a closed listener is retried after a pause, as net/http does.
func (s *Server) accept(l net.Listener) {
	var pause time.Duration
	for {
		c, err := l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				s.handoff.end(nil)
				return
			}
			select {
			case <-s.handoff.done:
				return
			default:
			}
			pause = min(max(2*pause, 5*time.Millisecond), time.Second)
			s.opts.Log.Warn("h1fast: accepting a connection", zap.Error(err), zap.Duration("retry_in", pause))
			time.Sleep(pause)
			continue
		}
		pause = 0
		if !s.opts.TLS && isTLS(c) {
			// TLS (and HTTP/2 on it) is net/http's.
			go s.handoff.give(c)
			continue
		}
		go s.serve(c)
	}
}

// waitFast waits for the connections of the fast path to end their
// request (Shutdown closed the idle ones), or for ctx, when it closes
// them.
func (s *Server) waitFast(ctx context.Context) error {
	select {
	case <-s.gone:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		for c := range s.conns {
			c.c.Close()
		}
		s.mu.Unlock()
		return ctx.Err()
	}
}

// setIdle records c's state; false when the server is closing and c
// must end.
func (s *Server) setIdle(c *conn, idle bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.conns[c] = idle
	return true
}

func (s *Server) forget(c *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.conns[c]; !ok {
		return
	}
	delete(s.conns, c)
	if s.closing && len(s.conns) == 0 {
		close(s.gone)
	}
}
