package vetted

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"spangle/shared/tlsconfig"
	"spangle/shared/topo"
)

// Retry defaults: how soon a node whose check failed is checked again.
const (
	// DefaultRetryUnreachable follows a node that did not answer: it may
	// be starting.
	DefaultRetryUnreachable = time.Second
	// DefaultRetryRefused follows a node whose certificate was refused:
	// a rotation may fix it.
	DefaultRetryRefused = 30 * time.Second
)

// Options configure a Watcher.
type Options struct {
	// Check verifies the node at addr: nil when a TLS handshake with it
	// shows an acceptable certificate; an error wrapping
	// tlsconfig.ErrPeerRefused when its certificate is refused; any other
	// error when it cannot be reached. Required.
	Check func(ctx context.Context, addr string) error
	// RetryUnreachable and RetryRefused are how soon a failed check is
	// made again; zero means the defaults.
	RetryUnreachable, RetryRefused time.Duration
	Logger                         *zap.Logger
	// Registerer, if not nil, gets spangle_routerd_nodes_unverified.
	Registerer prometheus.Registerer
}

// Watcher is a topo.Watcher showing only the verified nodes of inner's
// maps. It is safe for concurrent use; Run does the checks.
type Watcher struct {
	inner topo.Watcher
	opts  Options

	unverified prometheus.Gauge

	mu       sync.Mutex
	nodes    map[string]*node // guarded by mu; every address inner's map names
	gen      uint64           // guarded by mu; bumped when the verified set changes
	lastIn   *topo.Map        // guarded by mu; the inner map cur was made of
	lastGen  uint64           // guarded by mu; the gen cur was made at
	cur      *topo.Map        // guarded by mu; the last map returned
	changed  chan struct{}    // guarded by mu; closed (and replaced) when the verified set changes
	checking sync.WaitGroup
	failed   chan struct{} // a check failed: Run sets its retry timer
}

// node is what is known of one address.
type node struct {
	verified bool
	running  bool      // a check is under way
	next     time.Time // when a failed node is checked again
	seen     time.Time // when a map last named it
}

// forgetAfter is how long an address no map names is remembered: a node
// that re-registers (a new ZooKeeper session) keeps its verification.
const forgetAfter = 10 * time.Minute

// New returns a Watcher over inner.
func New(inner topo.Watcher, opts Options) (*Watcher, error) {
	if opts.Check == nil {
		return nil, errors.New("vetted: no Check")
	}
	if opts.RetryUnreachable <= 0 {
		opts.RetryUnreachable = DefaultRetryUnreachable
	}
	if opts.RetryRefused <= 0 {
		opts.RetryRefused = DefaultRetryRefused
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	w := &Watcher{inner: inner, opts: opts, nodes: map[string]*node{}, changed: make(chan struct{}), failed: make(chan struct{}, 1),
		unverified: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "spangle_routerd_nodes_unverified",
			Help: "Registered storaged nodes left out of the map: their TLS certificate is not verified (yet, or it was refused).",
		})}
	if opts.Registerer != nil {
		if err := opts.Registerer.Register(w.unverified); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// Run checks the nodes of every map inner publishes, until ctx ends.
func (w *Watcher) Run(ctx context.Context) error {
	defer w.checking.Wait()
	var seen uint64
	retry := time.NewTimer(time.Hour)
	defer retry.Stop()
	maps := make(chan *topo.Map, 1)
	go func() {
		for {
			m, err := w.inner.Wait(ctx, seen)
			if err != nil {
				close(maps)
				return
			}
			seen = m.Revision
			select {
			case maps <- m:
			case <-ctx.Done():
				close(maps)
				return
			}
		}
	}()
	m := w.inner.Map()
	for {
		if d := w.startChecks(ctx, m); d > 0 {
			retry.Reset(d)
		}
		select {
		case <-ctx.Done():
			return nil
		case next, ok := <-maps:
			if !ok {
				return nil
			}
			m = next
		case <-retry.C:
			m = w.inner.Map()
		case <-w.failed:
		}
	}
}

// startChecks starts a check of every address of m due for one, forgets
// the addresses m no longer names, and returns how long until the next
// failed one is due (0 when none is).
func (w *Watcher) startChecks(ctx context.Context, m *topo.Map) time.Duration {
	addrs := addresses(m)
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	for addr, n := range w.nodes {
		if addrs[addr] {
			n.seen = now
		} else if !n.running && now.Sub(n.seen) > forgetAfter {
			delete(w.nodes, addr)
		}
	}
	var due time.Duration
	for addr := range addrs {
		n := w.nodes[addr]
		if n == nil {
			n = &node{seen: now}
			w.nodes[addr] = n
		}
		if n.verified || n.running {
			continue
		}
		if wait := n.next.Sub(now); wait > 0 {
			if due == 0 || wait < due {
				due = wait
			}
			continue
		}
		n.running = true
		w.checking.Add(1)
		go w.check(ctx, addr)
	}
	w.setGaugeLocked()
	return due
}

func (w *Watcher) check(ctx context.Context, addr string) {
	defer w.checking.Done()
	err := w.opts.Check(ctx, addr)
	w.mu.Lock()
	defer w.mu.Unlock()
	n := w.nodes[addr]
	if n == nil {
		n = &node{seen: time.Now()}
		w.nodes[addr] = n
	}
	n.running = false
	switch {
	case err == nil:
		n.verified = true
		w.bumpLocked()
		w.opts.Logger.Info("vetted: node verified; its partitions count", zap.String("node", addr))
	case errors.Is(err, tlsconfig.ErrPeerRefused):
		n.next = time.Now().Add(w.opts.RetryRefused)
		// tlsconfig logs the refusal itself, once per node.
	default:
		n.next = time.Now().Add(w.opts.RetryUnreachable)
		w.opts.Logger.Debug("vetted: node not reachable yet", zap.String("node", addr), zap.Error(err))
	}
	w.setGaugeLocked()
	if err != nil {
		select {
		case w.failed <- struct{}{}:
		default:
		}
	}
}

func (w *Watcher) bumpLocked() {
	w.gen++
	close(w.changed)
	w.changed = make(chan struct{})
}

func (w *Watcher) setGaugeLocked() {
	n := 0
	for _, nd := range w.nodes {
		if !nd.verified && time.Since(nd.seen) < time.Minute {
			n++
		}
	}
	w.unverified.Set(float64(n))
}

// Map returns inner's latest map without the nodes not verified. Its
// Revision is inner's plus the number of changes to the verified set, so
// it grows with either.
func (w *Watcher) Map() *topo.Map {
	in := w.inner.Map()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cur != nil && in == w.lastIn && w.gen == w.lastGen {
		return w.cur
	}
	out := w.filterLocked(in)
	if w.cur != nil && out.Revision <= w.cur.Revision {
		// inner went back (a new session's first map): never let the
		// revision go down.
		out.Revision = w.cur.Revision + 1
	}
	w.cur, w.lastIn, w.lastGen = out, in, w.gen
	return out
}

// Wait implements topo.Watcher.
func (w *Watcher) Wait(ctx context.Context, after uint64) (*topo.Map, error) {
	for {
		m := w.Map()
		if m.Revision > after {
			return m, nil
		}
		w.mu.Lock()
		changed := w.changed
		w.mu.Unlock()
		innerCtx, cancel := context.WithCancel(ctx)
		got := make(chan error, 1)
		go func() {
			_, err := w.inner.Wait(innerCtx, w.inner.Map().Revision)
			got <- err
		}()
		select {
		case <-changed:
			cancel()
			<-got
		case err := <-got:
			cancel()
			if err != nil && ctx.Err() == nil {
				return nil, err
			}
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
}

// filterLocked returns a shallow copy of in, its revision moved by the
// verified set's changes, without the addresses not verified. Dbs that
// name none of them share in's versions.
func (w *Watcher) filterLocked(in *topo.Map) *topo.Map {
	out := *in
	out.Revision = in.Revision + w.gen
	ok := func(addr string) bool { n := w.nodes[addr]; return n != nil && n.verified }
	out.Nodes = make(map[string]topo.Node, len(in.Nodes))
	for addr, n := range in.Nodes {
		if ok(addr) {
			out.Nodes[addr] = n
		}
	}
	var dbs map[string]map[string]*topo.Version
	for db, vs := range in.DBs {
		if !namesUnverified(vs, ok) {
			continue
		}
		if dbs == nil {
			dbs = make(map[string]map[string]*topo.Version, len(in.DBs))
			for d, v := range in.DBs {
				dbs[d] = v
			}
		}
		fvs := make(map[string]*topo.Version, len(vs))
		for name, v := range vs {
			fv := &topo.Version{VersionInfo: v.VersionInfo, Replicas: make([][]string, len(v.Replicas))}
			for p, rs := range v.Replicas {
				for _, a := range rs {
					if ok(a) {
						fv.Replicas[p] = append(fv.Replicas[p], a)
					}
				}
			}
			fvs[name] = fv
		}
		dbs[db] = fvs
	}
	if dbs != nil {
		out.DBs = dbs
	}
	return &out
}

func namesUnverified(vs map[string]*topo.Version, ok func(string) bool) bool {
	for _, v := range vs {
		for _, rs := range v.Replicas {
			for _, a := range rs {
				if !ok(a) {
					return true
				}
			}
		}
	}
	return false
}

// addresses returns every node address m names: registered nodes and
// partition replicas.
func addresses(m *topo.Map) map[string]bool {
	out := make(map[string]bool, len(m.Nodes))
	for addr := range m.Nodes {
		out[addr] = true
	}
	for _, vs := range m.DBs {
		for _, v := range vs {
			for _, rs := range v.Replicas {
				for _, a := range rs {
					out[a] = true
				}
			}
		}
	}
	return out
}
