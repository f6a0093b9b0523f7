package zktopo

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"

	"spangle/shared/topo"
)

// The coordinator's part of the backend: a leader election with
// ephemeral sequential znodes, each candidate watching its predecessor,
// and decisions committed with one multi-op that checks the leadership,
// the node list and the previous decision, so a stale leader's decision
// never lands. See topo.Coordination.

var _ topo.Coordination = (*Conn)(nil)

// electionPrefix begins the name of every election entry; ZooKeeper
// appends the sequence number.
const electionPrefix = "n_"

// call runs f, a few ZooKeeper calls that each wait for their answer or
// the connection's end, with ctx bounding the wait. Without a session it
// returns ErrUnavailable at once.
func (c *Conn) call(ctx context.Context, f func() error) error {
	_, err := do(c, ctx, func() (struct{}, error) { return struct{}{}, f() })
	return err
}

// do is call for an f with a result. f's result reaches the caller only
// through the channel, so an f still running after ctx ended races with
// nothing; on an error from f its result is returned with the error.
func do[T any](c *Conn, ctx context.Context, f func() (T, error)) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, fmt.Errorf("zktopo: %w", err)
	}
	c.mu.Lock()
	if c.isClosed {
		c.mu.Unlock()
		return zero, fmt.Errorf("zktopo: %w", topo.ErrClosed)
	}
	c.wg.Add(1) // before Close waits: Close sets isClosed first
	c.mu.Unlock()
	if !c.Connected() {
		c.wg.Done()
		return zero, fmt.Errorf("zktopo: %w: no session", topo.ErrUnavailable)
	}
	type result struct {
		v   T
		err error
	}
	res := make(chan result, 1)
	go func() {
		defer c.wg.Done()
		v, err := f()
		res <- result{v, err}
	}()
	select {
	case r := <-res:
		if r.err == nil {
			return r.v, nil
		}
		// f's partial result goes back too: Campaign needs to know the
		// entry it created before a later call failed.
		if errors.Is(r.err, topo.ErrFenced) || errors.Is(r.err, topo.ErrBadName) {
			return r.v, fmt.Errorf("zktopo: %w", r.err)
		}
		return r.v, c.mapErr(r.err)
	case <-ctx.Done():
		return zero, c.mapErr(ctx.Err())
	}
}

// seqOf returns the sequence number ZooKeeper gave an election entry;
// names without one sort last.
func seqOf(name string) string {
	i := strings.LastIndex(name, electionPrefix)
	if i < 0 {
		return "~" + name
	}
	return name[i+len(electionPrefix):]
}

// sortElection orders election entries by their sequence numbers, the
// order candidates entered in.
func sortElection(names []string) {
	sort.Slice(names, func(i, j int) bool { return seqOf(names[i]) < seqOf(names[j]) })
}

// Campaign implements topo.Coordination: it creates an ephemeral
// sequential entry under election/ and, until that entry is the first,
// waits for the entry just before it to go.
func (c *Conn) Campaign(ctx context.Context, id string) (topo.Leadership, error) {
	dir := c.paths.Election()
	mine := "" // our entry's name, once created
	withdraw := func() {
		if mine == "" {
			return
		}
		dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := c.call(dctx, func() error {
			err := c.zk.Delete(dir+"/"+mine, -1)
			if errors.Is(err, zk.ErrNoNode) {
				return nil
			}
			return err
		})
		if err != nil {
			c.log.Warn("zktopo: withdrawing from the election; the entry goes with the session", zap.String("entry", mine), zap.Error(err))
		}
	}
	// step is what one look at the election found.
	type step struct {
		mine, pred string
		kids       []string
		session    int64
		ch         <-chan zk.Event
	}
	for {
		st, err := do(c, ctx, func() (step, error) {
			st := step{mine: mine}
			if st.mine == "" {
				if err := c.dropOwnEntries(dir); err != nil {
					return st, err
				}
				if err := c.ensureParents(dir + "/" + electionPrefix); err != nil {
					return st, err
				}
				p, err := c.zk.CreateProtectedEphemeralSequential(dir+"/"+electionPrefix, []byte(id), c.acl.forPath(dir))
				if err != nil {
					return st, refused("creating an entry under", dir, err)
				}
				st.mine = p[strings.LastIndexByte(p, '/')+1:]
			}
			var err error
			if st.kids, _, err = c.zk.Children(dir); err != nil {
				return st, err
			}
			st.session = c.zk.SessionID()
			sortElection(st.kids)
			for i, k := range st.kids {
				if k == st.mine && i > 0 {
					st.pred = st.kids[i-1]
					var ok bool
					if ok, _, st.ch, err = c.zk.ExistsW(dir + "/" + st.pred); err != nil || !ok {
						st.ch = nil
					}
					return st, err
				}
			}
			return st, nil
		})
		if st.mine != "" {
			mine = st.mine
		}
		if err != nil {
			if ctx.Err() != nil {
				withdraw()
			}
			return nil, err
		}
		kids, session, ch := st.kids, st.session, st.ch
		switch {
		case !contains(kids, mine):
			mine = "" // the session that held it ended: enter again
			continue
		case kids[0] == mine:
			l := &zkLeadership{c: c, path: dir + "/" + mine, token: mine, session: session, lost: make(chan struct{})}
			if err := l.start(); err != nil {
				return nil, err
			}
			c.log.Info("zktopo: leading", zap.String("entry", mine), zap.String("id", id))
			return l, nil
		case ch == nil:
			continue // the predecessor went meanwhile
		}
		select {
		case <-ch:
		case <-ctx.Done():
			withdraw()
			return nil, fmt.Errorf("zktopo: campaigning: %w", ctx.Err())
		case <-c.closed:
			return nil, fmt.Errorf("zktopo: %w", topo.ErrClosed)
		}
	}
}

// dropOwnEntries deletes election entries this session made before, so
// that an entry left by an interrupted campaign cannot lead in its name.
func (c *Conn) dropOwnEntries(dir string) error {
	kids, _, err := c.zk.Children(dir)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	sess := c.zk.SessionID()
	for _, k := range kids {
		ok, st, err := c.zk.Exists(dir + "/" + k)
		if err != nil {
			return err
		}
		if ok && st.EphemeralOwner == sess {
			if err := c.zk.Delete(dir+"/"+k, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
				return err
			}
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// zkLeadership is a won election: it watches its entry and closes lost
// once the entry or the session that owns it is gone.
type zkLeadership struct {
	c       *Conn
	path    string
	token   string
	session int64
	lost    chan struct{}
}

func (l *zkLeadership) Token() string         { return l.token }
func (l *zkLeadership) Lost() <-chan struct{} { return l.lost }

// Resign deletes the election entry; Lost is closed soon after.
func (l *zkLeadership) Resign(ctx context.Context) error {
	return l.c.call(ctx, func() error {
		err := l.c.zk.Delete(l.path, -1)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		return err
	})
}

func (l *zkLeadership) start() error {
	c := l.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.isClosed {
		return fmt.Errorf("zktopo: %w", topo.ErrClosed)
	}
	c.wg.Add(1)
	go l.watch()
	return nil
}

// watch follows the entry until it is gone, the session changes or the
// Conn closes.
func (l *zkLeadership) watch() {
	c := l.c
	defer c.wg.Done()
	defer close(l.lost)
	retry := time.NewTimer(0)
	defer retry.Stop()
	for {
		if c.zk.SessionID() != l.session && c.zk.State() == zk.StateHasSession {
			c.log.Warn("zktopo: session changed; leadership lost", zap.String("entry", l.token))
			return
		}
		ok, st, ch, err := c.zk.ExistsW(l.path)
		switch {
		case err == nil && (!ok || st.EphemeralOwner != l.session):
			c.log.Info("zktopo: election entry gone; leadership over", zap.String("entry", l.token))
			return
		case err != nil:
			ch = nil
			retry.Reset(100 * time.Millisecond)
		}
		select {
		case <-c.closed:
			return
		case <-ch:
		case <-retry.C:
		}
	}
}

// Leader implements topo.Coordination.
func (c *Conn) Leader(ctx context.Context) (id, token string, err error) {
	dir := c.paths.Election()
	who, err := do(c, ctx, func() ([2]string, error) {
		for range maxAttempts {
			kids, _, err := c.zk.Children(dir)
			if errors.Is(err, zk.ErrNoNode) || (err == nil && len(kids) == 0) {
				return [2]string{}, nil
			}
			if err != nil {
				return [2]string{}, err
			}
			sortElection(kids)
			data, _, err := c.zk.Get(dir + "/" + kids[0])
			if errors.Is(err, zk.ErrNoNode) {
				continue // it just went: list again
			}
			if err != nil {
				return [2]string{}, err
			}
			return [2]string{string(data), kids[0]}, nil
		}
		return [2]string{}, fmt.Errorf("zktopo: the election kept changing under %d reads", maxAttempts)
	})
	return who[0], who[1], err
}

// Ring implements topo.Coordination.
func (c *Conn) Ring(ctx context.Context) (topo.Ring, error) {
	return do(c, ctx, c.readRing)
}

func (c *Conn) readRing() (topo.Ring, error) {
	kids, st, err := c.zk.Children(c.paths.Nodes())
	if errors.Is(err, zk.ErrNoNode) {
		return topo.Ring{}, nil
	}
	if err != nil {
		return topo.Ring{}, err
	}
	sort.Strings(kids)
	return topo.Ring{Version: int64(st.Cversion), Nodes: kids}, nil
}

// LastDecision implements topo.Coordination.
func (c *Conn) LastDecision(ctx context.Context) (topo.Decision, error) {
	return do(c, ctx, c.readDecision)
}

// readDecision reads the decision znode, creating it empty (epoch 0)
// if absent, so that every decision is a versioned SetData.
func (c *Conn) readDecision() (topo.Decision, error) {
	p := c.paths.Decision()
	for range maxAttempts {
		data, st, err := c.zk.Get(p)
		if errors.Is(err, zk.ErrNoNode) {
			if err := c.ensureParents(p); err != nil {
				return topo.Decision{}, err
			}
			if _, err := c.zk.Create(p, nil, zk.FlagPersistent, c.acl.forPath(p)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
				return topo.Decision{}, refused("creating", p, err)
			}
			continue
		}
		if err != nil {
			return topo.Decision{}, err
		}
		d, err := topo.DecodeDecision(data)
		if err != nil {
			// The record is only what the last decision said; its epoch
			// (the data version) is what fences the next one. A record
			// that fails validation reads as none, so that the leader's
			// next decision overwrites it rather than every round failing.
			c.rej.reject("decision", p, err)
			d = topo.Decision{}
		} else {
			c.rej.accept(p)
		}
		d.Epoch = int64(st.Version)
		return d, nil
	}
	return topo.Decision{}, fmt.Errorf("zktopo: %s kept vanishing", p)
}
