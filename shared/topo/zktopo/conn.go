package zktopo

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"spangle/shared/topo"
)

// DefaultSessionTimeout is the session timeout unless Options say.
const DefaultSessionTimeout = 10 * time.Second

// DefaultConnectTimeout bounds one attempt to reach one server unless
// Options say (the ZooKeeper client's own default).
const DefaultConnectTimeout = time.Second

// Options configure a Conn or Watcher. Zero values are the documented
// defaults.
type Options struct {
	// Servers lists the ZooKeeper servers as host:port; required.
	Servers []string
	// Cluster names the cluster, whose znodes live under
	// /<Prefix>/<Cluster>/v1; required.
	Cluster string
	// Prefix defaults to topo.DefaultPrefix. It may have several
	// elements ("a/b"); leading and trailing slashes are ignored.
	Prefix string
	// SessionTimeout is how long ZooKeeper keeps the session, and so the
	// ephemeral znodes, of a client it cannot hear; default
	// DefaultSessionTimeout. The server may bound it.
	SessionTimeout time.Duration
	// ConnectTimeout bounds each attempt to dial one server (TCP
	// connect, name resolution included); default DefaultConnectTimeout.
	// With several servers, a dead one costs at most this before the
	// next is tried.
	ConnectTimeout time.Duration
	// Logger receives the backend's log and the ZooKeeper client's;
	// default a no-op logger.
	Logger *zap.Logger
	// Registerer receives the backend's metrics
	// (spangle_zk_entries_rejected_total); nil registers nowhere.
	Registerer prometheus.Registerer
	// Auth is the digest credential the session authenticates with
	// (AddAuth, sent again by the client on every reconnection and new
	// session) and whose identity alone may change the znodes this Conn
	// creates (see acls). Zero: no authentication, and znodes open to
	// every client, as before. Until the credential is accepted the Conn
	// counts as not connected.
	Auth Credential
	// ReadACL is who may read the znodes this Conn creates when Auth is
	// set: ReadWorld (default, "") or ReadAuth.
	ReadACL string
}

// Conn is a ZooKeeper session that publishes a storaged's entries and
// mirrors the cluster. It implements topo.Conn and is safe for concurrent
// use.
type Conn struct {
	paths topo.Paths
	log   *zap.Logger
	zkLog *zkLogger
	rej   *rejects
	acl   acls
	auth  Credential
	zk    *zk.Conn
	mir   *topo.Mirror
	// events is the client's event channel, drained only at Close: the
	// client closes it when its last goroutine is done.
	events <-chan zk.Event

	closed    chan struct{} // closed by Close
	wg        sync.WaitGroup
	watchKick chan struct{} // cap 1: the watch loop has work
	syncKick  chan struct{} // cap 1: a session is up: publish again
	sem       chan struct{} // cap 1: held by the write in flight
	up        atomic.Bool   // a session was up at the last state event
	// settled: the session of the last state event is up and the client
	// has had resyncDelay to re-arm its watches (see resyncDelay);
	// sessionSeq counts session-up events, so that a late timer of an
	// earlier session does not settle a later one.
	settled    atomic.Bool
	sessionSeq atomic.Uint64
	everUp     atomic.Bool // a session was ever up on this Conn
	authed     atomic.Bool // no Auth, or the client holds it (AddAuth succeeded)
	denied     denials     // ACL refusals, said once, tried again later

	evMu      sync.Mutex
	dirty     map[string]bool // guarded by evMu; paths to list again
	resyncAll bool            // guarded by evMu; list every known path again

	mu       sync.Mutex
	isClosed bool // guarded by mu
	// What this Conn was asked to publish, all guarded by mu.
	nodePath string
	nodeData []byte
	infos    map[string]topo.VersionInfo // by version path, as given to PublishVersion
	pending  map[string]bool             // version paths whose creation waits for the service
	parts    map[string]string           // replica path -> its version path
	// published maps an ephemeral path to the session that created it.
	published map[string]int64 // guarded by mu
	// The writes waiting for the next batch (see batch.go), and the
	// version entries a batch created for callers still to look.
	vqueue map[string]queuedVersion // guarded by mu
	equeue map[string]bool          // guarded by mu
	vdone  map[string]bool          // guarded by mu
	// vfound holds the version entries a batch found already there
	// (another node was first): their callers read them, outside the
	// write semaphore.
	vfound map[string]bool // guarded by mu
}

var _ topo.Conn = (*Conn)(nil)

// complete checks o and fills in the defaults of what it leaves zero.
func (o *Options) complete() error {
	if len(o.Servers) == 0 {
		return errors.New("zktopo: no ZooKeeper servers")
	}
	o.Prefix = strings.Trim(o.Prefix, "/")
	if !topo.ValidName(o.Cluster) || !validPrefix(o.Prefix) {
		return fmt.Errorf("zktopo: %w: cluster %q and each element of prefix %q must match [A-Za-z0-9][A-Za-z0-9_-]*",
			topo.ErrBadName, o.Cluster, o.Prefix)
	}
	if err := CheckReadACL(o.ReadACL); err != nil {
		return err
	}
	if o.SessionTimeout <= 0 {
		o.SessionTimeout = DefaultSessionTimeout
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	return nil
}

// Open starts a session with opts.Servers in the background and returns
// at once; until the session is up, calls return topo.ErrUnavailable and
// the map is empty.
func Open(opts Options) (*Conn, error) {
	if err := opts.complete(); err != nil {
		return nil, err
	}
	rej, err := newRejects(opts.Logger, opts.Registerer)
	if err != nil {
		return nil, err
	}
	paths := topo.Paths{Prefix: opts.Prefix, Cluster: opts.Cluster}
	c := &Conn{
		rej:       rej,
		acl:       newACLs(paths, opts.Auth, opts.ReadACL),
		auth:      opts.Auth,
		paths:     paths,
		log:       opts.Logger,
		zkLog:     &zkLogger{l: opts.Logger.Named("zk").Sugar()},
		mir:       topo.NewMirror(),
		closed:    make(chan struct{}),
		watchKick: make(chan struct{}, 1),
		syncKick:  make(chan struct{}, 1),
		sem:       make(chan struct{}, 1),
		dirty:     map[string]bool{},
		infos:     map[string]topo.VersionInfo{},
		pending:   map[string]bool{},
		parts:     map[string]string{},
		published: map[string]int64{},
		vqueue:    map[string]queuedVersion{},
		equeue:    map[string]bool{},
		vdone:     map[string]bool{},
		vfound:    map[string]bool{},
	}
	c.dirty[c.paths.Nodes()] = true
	c.dirty[c.paths.Partitions()] = true
	conn, events, err := zk.Connect(opts.Servers, opts.SessionTimeout,
		zk.WithLogger(c.zkLog),
		zk.WithLogInfo(false),
		zk.WithHostProvider(&hosts{}),
		zk.WithDialer(func(network, addr string, _ time.Duration) (net.Conn, error) {
			return net.DialTimeout(network, addr, opts.ConnectTimeout)
		}),
		zk.WithEventCallback(c.onEvent))
	if err != nil {
		return nil, fmt.Errorf("zktopo: connecting to %v: %w", opts.Servers, err)
	}
	c.zk, c.events = conn, events
	c.authed.Store(opts.Auth.IsZero())
	c.wg.Add(2)
	go c.watchLoop()
	go c.syncLoop()
	if !opts.Auth.IsZero() {
		c.wg.Add(1)
		go c.authLoop()
	}
	kick(c.watchKick)
	return c, nil
}

// validPrefix accepts "" (the default) and names joined by '/', so that
// both "spangle" and sequins-style "/services/spangle" work.
func validPrefix(p string) bool {
	if p == "" {
		return true
	}
	for _, e := range strings.Split(p, "/") {
		if !topo.ValidName(e) {
			return false
		}
	}
	return true
}

// zkLogger sends the ZooKeeper client's log to zap. The client logs a
// failed dial about every second for as long as an outage lasts; the
// first of an outage goes out at Warn (the coordination service cannot
// be reached: an operator should know), the rest at Debug.
type zkLogger struct {
	l       *zap.SugaredLogger
	failing atomic.Bool // a dial failed since the last session came up
}

func (z *zkLogger) Printf(format string, args ...any) {
	if strings.HasPrefix(format, "failed to connect") {
		if z.failing.Swap(true) {
			z.l.Debugf(format, args...)
		} else {
			z.l.Warnf(format, args...)
		}
		return
	}
	z.l.Infof(format, args...)
}

// resyncDelay is how long after a session comes up again the Conn waits
// before sending any request. The ZooKeeper client (go-zookeeper v1.0.4)
// re-arms its watches right after this event, reading the last zxid it
// saw without a lock while its receive loop may be writing it for the
// answer to a request of ours: a data race that go test -race reports
// (go-zookeeper/zk#35; v1.0.4 is the newest release). Its re-arming
// takes microseconds; until resyncDelay has passed, Connected says no,
// so no request of ours (a listing, a retry, a publish) is in flight
// while it runs. The first session of a Conn has no watches to re-arm
// and is usable at once. 100 ms leaves room for a loaded machine: a
// CI run at load average 18 saw the race with 50 ms, from a listing
// retried as the session came back.
const resyncDelay = 100 * time.Millisecond

// onEvent receives every event of the ZooKeeper client, in its own
// goroutines: it must not block.
func (c *Conn) onEvent(ev zk.Event) {
	if ev.Type == zk.EventSession {
		switch ev.State {
		case zk.StateHasSession:
			c.zkLog.failing.Store(false)
			if !c.up.Swap(true) {
				c.log.Info("zktopo: session up", zap.String("server", ev.Server))
			}
			c.evMu.Lock()
			c.resyncAll = true
			c.evMu.Unlock()
			seq := c.sessionSeq.Add(1)
			if !c.everUp.Swap(true) {
				c.settled.Store(true)
			}
			time.AfterFunc(resyncDelay, func() {
				if c.sessionSeq.Load() == seq && c.up.Load() {
					c.settled.Store(true)
				}
				kick(c.watchKick)
				kick(c.syncKick)
			})
		case zk.StateDisconnected, zk.StateExpired:
			c.settled.Store(false)
		}
		switch ev.State {
		case zk.StateExpired:
			c.log.Warn("zktopo: session expired; a new one will publish everything again")
		case zk.StateDisconnected:
			if !c.up.Swap(false) {
				break
			}
			select {
			case <-c.closed:
				// Close hung up: a clean stop, not an outage.
				c.log.Info("zktopo: disconnected on close", zap.String("server", ev.Server))
			default:
				c.log.Warn("zktopo: disconnected; the last map stays in force", zap.String("server", ev.Server))
			}
		}
		return
	}
	if ev.Path != "" {
		c.evMu.Lock()
		c.dirty[ev.Path] = true
		c.evMu.Unlock()
		kick(c.watchKick)
	}
}

func kick(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Map returns the latest map, from memory.
func (c *Conn) Map() *topo.Map { return c.mir.Map() }

// Wait blocks until the map's revision is greater than after, ctx ends
// or the Conn is closed (topo.ErrClosed).
func (c *Conn) Wait(ctx context.Context, after uint64) (*topo.Map, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(closedContext{c.closed}, func() { cancel(topo.ErrClosed) })
	defer stop()
	m, err := c.mir.Wait(ctx, after)
	if err != nil {
		if context.Cause(ctx) == topo.ErrClosed {
			return nil, fmt.Errorf("zktopo: %w", topo.ErrClosed)
		}
		return nil, err
	}
	return m, nil
}

// closedContext is a context done when a channel closes, for AfterFunc.
type closedContext struct{ done chan struct{} }

func (closedContext) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c closedContext) Done() <-chan struct{}     { return c.done }
func (c closedContext) Err() error {
	select {
	case <-c.done:
		return context.Canceled
	default:
		return nil
	}
}
func (closedContext) Value(any) any { return nil }

// Connected reports whether a session is up now, authenticated when
// Options.Auth is set, and settled: a session that came back is usable
// resyncDelay after it did.
func (c *Conn) Connected() bool {
	select {
	case <-c.closed:
		return false
	default:
	}
	return c.authed.Load() && c.settled.Load() && c.zk.State() == zk.StateHasSession
}

// WaitConnected blocks until a session is up, ctx ends (its error) or
// the Conn is closed (topo.ErrClosed). Nothing needs it, since calls made
// without a session are remembered, but a daemon may want to say at
// start that it cannot reach ZooKeeper.
func (c *Conn) WaitConnected(ctx context.Context) error {
	tk := time.NewTicker(10 * time.Millisecond)
	defer tk.Stop()
	for !c.Connected() {
		select {
		case <-c.closed:
			return fmt.Errorf("zktopo: %w", topo.ErrClosed)
		case <-ctx.Done():
			return fmt.Errorf("zktopo: waiting for a session: %w", ctx.Err())
		case <-tk.C:
		}
	}
	return nil
}

// Close ends the session, so ZooKeeper removes this Conn's ephemeral
// znodes at once, and stops the background work.
func (c *Conn) Close() error {
	c.mu.Lock()
	if c.isClosed {
		c.mu.Unlock()
		return nil
	}
	c.isClosed = true
	c.mu.Unlock()
	close(c.closed)
	c.zk.Close()
	// Wait for the client's goroutines, so that none logs after Close.
	for range c.events {
	}
	c.wg.Wait()
	return nil
}

// Watcher is the read-only view of the cluster a router holds: a session
// that publishes nothing. It implements topo.Watcher.
type Watcher struct {
	c *Conn
}

var _ topo.Watcher = (*Watcher)(nil)

// OpenWatcher starts a read-only session, as Open does.
func OpenWatcher(opts Options) (*Watcher, error) {
	c, err := Open(opts)
	if err != nil {
		return nil, err
	}
	return &Watcher{c: c}, nil
}

// Map returns the latest map, from memory.
func (w *Watcher) Map() *topo.Map { return w.c.Map() }

// Wait is Conn.Wait.
func (w *Watcher) Wait(ctx context.Context, after uint64) (*topo.Map, error) {
	return w.c.Wait(ctx, after)
}

// Connected reports whether a session is up now.
func (w *Watcher) Connected() bool { return w.c.Connected() }

// WaitConnected is Conn.WaitConnected.
func (w *Watcher) WaitConnected(ctx context.Context) error { return w.c.WaitConnected(ctx) }

// Run returns nil once ctx ends, after closing the session: it lets the
// Watcher's life follow a context.
func (w *Watcher) Run(ctx context.Context) error {
	<-ctx.Done()
	return w.c.Close()
}

// Close ends the session.
func (w *Watcher) Close() error { return w.c.Close() }

// mapErr turns a ZooKeeper client error into the topo sentinels.
func (c *Conn) mapErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("zktopo: %w", err)
	case errors.Is(err, zk.ErrClosing):
		select {
		case <-c.closed:
			return fmt.Errorf("zktopo: %w", topo.ErrClosed)
		default:
			return fmt.Errorf("zktopo: %w: %v", topo.ErrUnavailable, err)
		}
	case isConnErr(err):
		return fmt.Errorf("zktopo: %w: %v", topo.ErrUnavailable, err)
	}
	return fmt.Errorf("zktopo: %w", err)
}

// isConnErr reports whether err says the session or connection is away
// rather than something about the request.
func isConnErr(err error) bool {
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer) ||
		errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, zk.ErrSessionMoved) ||
		errors.Is(err, zk.ErrClosing)
}
