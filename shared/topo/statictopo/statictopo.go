package statictopo

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"sync"
	"time"

	"go.uber.org/zap"

	"spangle/shared/topo"
	"spangle/shared/wait"
	"spangle/shared/wire"
)

// DefaultPeriod is how often each node is read by default.
const DefaultPeriod = time.Second

// DefaultMisses is how many failed polls in a row drop a node by default.
const DefaultMisses = 3

// maxStatus bounds a status page read, so that a confused node cannot
// make the router buffer without end.
const maxStatus = 64 << 20

// Options configure a Watcher. Zero values are the documented defaults.
type Options struct {
	// URLs are the storaged base URLs, http://host:port; required. The
	// host:port is the address the map gives for the node, so it is what
	// the router dials.
	URLs []string
	// Scheme every URL must have: "http" (default), or "https" when
	// Client speaks the cluster's TLS.
	Scheme string
	// Period is the time between two reads of every node; default
	// DefaultPeriod.
	Period time.Duration
	// Timeout bounds one node's answer; default Period.
	Timeout time.Duration
	// Misses is how many polls in a row a node may fail before it and
	// its replicas leave the map (default DefaultMisses). Until then the
	// map keeps what it last said: like a ZooKeeper session timeout, it
	// keeps one slow answer on a busy machine from taking a healthy node
	// out, while the router's circuit breakers deal with a node that is
	// really down. The versions it last listed stay in the map, without
	// its replicas, as ZooKeeper's persistent version entries outlive a
	// node's session: a node that stops answering has not removed a db.
	Misses int
	// Client makes the requests; default a client of the Watcher's own
	// that ignores proxy settings of the environment.
	Client *http.Client
	// Logger defaults to a no-op logger.
	Logger *zap.Logger
}

// Watcher implements topo.Watcher by polling. It is safe for concurrent
// use; Run does the polling.
type Watcher struct {
	*topo.Mirror
	opts  Options
	nodes []node
	log   *zap.Logger

	mu     sync.Mutex                  // serializes polls
	misses map[string]int              // guarded by mu; failed polls in a row, by address
	last   map[string]*wire.NodeStatus // guarded by mu; last answer of each node ever read
}

// node is one storaged to read.
type node struct {
	status string // the status page URL
	addr   string // host:port
}

var _ topo.Watcher = (*Watcher)(nil)

// New checks opts and returns a Watcher holding the empty map; Run fills
// it.
func New(opts Options) (*Watcher, error) {
	if len(opts.URLs) == 0 {
		return nil, fmt.Errorf("statictopo: no storaged URLs")
	}
	if opts.Period <= 0 {
		opts.Period = DefaultPeriod
	}
	if opts.Timeout <= 0 {
		opts.Timeout = opts.Period
	}
	if opts.Misses <= 0 {
		opts.Misses = DefaultMisses
	}
	if opts.Client == nil {
		opts.Client = &http.Client{Transport: &http.Transport{
			Proxy:               nil,
			MaxIdleConnsPerHost: 2,
			IdleConnTimeout:     time.Minute,
		}}
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	w := &Watcher{Mirror: topo.NewMirror(), opts: opts, log: opts.Logger,
		misses: map[string]int{}, last: map[string]*wire.NodeStatus{}}
	seen := map[string]bool{}
	if opts.Scheme == "" {
		opts.Scheme = "http"
	}
	for _, s := range opts.URLs {
		n, err := parseURL(s, opts.Scheme)
		if err != nil {
			return nil, err
		}
		if !seen[n.addr] {
			seen[n.addr] = true
			w.nodes = append(w.nodes, n)
		}
	}
	return w, nil
}

// parseURL accepts scheme://host:port (with an optional trailing slash).
func parseURL(s, scheme string) (node, error) {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != scheme || u.User != nil || (u.Path != "" && u.Path != "/") ||
		u.RawQuery != "" || u.Fragment != "" {
		return node{}, fmt.Errorf("statictopo: storaged %q is not %s://host:port", s, scheme)
	}
	if _, _, err := net.SplitHostPort(u.Host); err != nil {
		return node{}, fmt.Errorf("statictopo: storaged %q: %w", s, err)
	}
	if err := topo.CheckAddr(u.Host); err != nil {
		return node{}, fmt.Errorf("statictopo: storaged %q: %w", s, err)
	}
	return node{status: scheme + "://" + u.Host + "/", addr: u.Host}, nil
}

// Run polls every node at once and then every Period until ctx ends; it
// returns nil then.
func (w *Watcher) Run(ctx context.Context) error {
	defer w.opts.Client.CloseIdleConnections()
	wait.Every(ctx, w.opts.Period, w.Poll)
	return nil
}

// Poll reads every node once, in parallel, and publishes the map they
// make together if it differs from the current one.
func (w *Watcher) Poll(ctx context.Context) {
	w.mu.Lock()
	defer w.mu.Unlock()
	results := make([]*wire.NodeStatus, len(w.nodes))
	errs := make([]error, len(w.nodes))
	var wg sync.WaitGroup
	for i, n := range w.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = w.read(ctx, n)
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return // a cancelled poll says nothing about the nodes
	}
	var b topo.Builder
	pins := map[string]topo.Pin{}
	for i, n := range w.nodes {
		if errs[i] == nil {
			if w.misses[n.addr] >= w.opts.Misses {
				w.log.Info("storaged answers again", zap.String("addr", n.addr))
			}
			w.misses[n.addr] = 0
			w.last[n.addr] = results[i]
		} else {
			w.misses[n.addr]++
			switch m := w.misses[n.addr]; {
			case m == w.opts.Misses:
				w.log.Warn("storaged does not answer; its replicas leave the map, the versions it listed stay known",
					zap.String("addr", n.addr), zap.Int("polls_missed", m), zap.Error(errs[i]))
			case m == 1:
				w.log.Info("storaged missed a status poll", zap.String("addr", n.addr), zap.Error(errs[i]))
			}
		}
		if st := w.last[n.addr]; st != nil {
			live := w.misses[n.addr] < w.opts.Misses
			add(&b, n.addr, st, live)
			latestPins(pins, st)
			if live {
				pinErrors(&b, st)
			}
		}
	}
	for db, p := range pins {
		b.AddPin(db, p)
	}
	next := b.Build(0)
	if cur := w.Map(); cur.Revision > 0 && reflect.DeepEqual(cur.Nodes, next.Nodes) && reflect.DeepEqual(cur.DBs, next.DBs) && reflect.DeepEqual(cur.Pins, next.Pins) &&
		reflect.DeepEqual(cur.PinErrors, next.PinErrors) {
		return
	}
	w.Publish(next)
}

// add records what one node says it serves: every version not in ERROR
// whose partition count is known and of which it has loaded partitions,
// with those partitions if the node is live, else without them.
func add(b *topo.Builder, addr string, st *wire.NodeStatus, live bool) {
	if live {
		b.AddNode(topo.Node{ID: st.Node.ID, ShardID: addr, Addr: addr, Started: st.Node.Started.UTC()})
	}
	for db, ds := range st.DBs {
		if !topo.ValidName(db) {
			continue
		}
		for v, vs := range ds.Versions {
			if vs.State == wire.StateError || vs.NumPartitions <= 0 || len(vs.Partitions) == 0 || !topo.ValidName(v) {
				continue
			}
			b.AddVersion(db, v, topo.VersionInfo{NumPartitions: vs.NumPartitions, Created: vs.Created.UTC()})
			if !live {
				continue
			}
			for _, p := range vs.Partitions {
				if p >= 0 && p < vs.NumPartitions {
					b.AddReplica(db, v, p, addr)
				}
			}
		}
	}
}

// latestPins keeps, per db, the pin of the greatest generation a node
// reports: the latest step of the _PIN marker any node has taken.
func latestPins(pins map[string]topo.Pin, st *wire.NodeStatus) {
	for db, ds := range st.DBs {
		if !topo.ValidName(db) || ds.PinGeneration == 0 || (ds.Pin != "" && !topo.ValidName(ds.Pin)) {
			continue
		}
		if ds.PinGeneration > pins[db].Generation {
			pins[db] = topo.Pin{Version: ds.Pin, Generation: ds.PinGeneration}
		}
	}
}

// pinErrors records why a live node does not follow a db's _PIN marker.
func pinErrors(b *topo.Builder, st *wire.NodeStatus) {
	for db, ds := range st.DBs {
		if topo.ValidName(db) && ds.PinError != "" {
			b.AddPinError(db, ds.PinError)
		}
	}
}

// read fetches one node's status.
func (w *Watcher) read(ctx context.Context, n node) (*wire.NodeStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, w.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, n.status, nil)
	if err != nil {
		return nil, fmt.Errorf("statictopo: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := w.opts.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("statictopo: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		return nil, fmt.Errorf("statictopo: %s answered %s", n.status, resp.Status)
	}
	var st wire.NodeStatus
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxStatus)).Decode(&st); err != nil {
		return nil, fmt.Errorf("statictopo: %s: decoding status: %w", n.status, err)
	}
	return &st, nil
}
