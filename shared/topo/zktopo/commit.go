package zktopo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/go-zookeeper/zk"

	"spangle/shared/topo"
)

// Assignments implements topo.Coordination.
func (c *Conn) Assignments(ctx context.Context) ([]topo.Assignment, error) {
	return do(c, ctx, func() ([]topo.Assignment, error) {
		var out []topo.Assignment
		root := c.paths.Assignments()
		dbs, _, err := c.zk.Children(root)
		if errors.Is(err, zk.ErrNoNode) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		for _, db := range sortedCopy(dbs) {
			vs, _, err := c.zk.Children(root + "/" + db)
			if errors.Is(err, zk.ErrNoNode) {
				continue
			}
			if err != nil {
				return nil, err
			}
			for _, v := range sortedCopy(vs) {
				ap := c.paths.Assignment(db, v)
				data, _, err := c.zk.Get(ap)
				if errors.Is(err, zk.ErrNoNode) {
					continue
				}
				if err != nil {
					return nil, err
				}
				a, err := topo.DecodeAssignment(db, v, data)
				if err != nil {
					c.rej.reject("assignment", ap, err)
					continue
				}
				c.rej.accept(ap)
				out = append(out, a)
			}
		}
		return out, nil
	})
}

// Assignment reads the assignment of one db version alone: ok false
// when there is none (or it fails validation). A node deciding its
// partitions of a version needs only that one, where Assignments reads
// every db's, one request after another: at a start with 500 dbs, each
// of 500 decisions read up to 500 assignments.
func (c *Conn) Assignment(ctx context.Context, db, version string) (topo.Assignment, bool, error) {
	type found struct {
		a  topo.Assignment
		ok bool
	}
	r, err := do(c, ctx, func() (found, error) {
		ap := c.paths.Assignment(db, version)
		data, _, err := c.zk.Get(ap)
		if errors.Is(err, zk.ErrNoNode) {
			return found{}, nil
		}
		if err != nil {
			return found{}, err
		}
		a, err := topo.DecodeAssignment(db, version, data)
		if err != nil {
			c.rej.reject("assignment", ap, err)
			return found{}, nil
		}
		c.rej.accept(ap)
		return found{a, true}, nil
	})
	return r.a, r.ok, err
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

// Commit implements topo.Coordination. It first reads what the fence
// names and refuses a stale decision early; then one multi-op checks
// that the leader's entry and every node of the ring still exist, and
// sets the decision record at the epoch the leader read, together with
// the assignments. ZooKeeper applies all of it or none, so a decision
// from a leader whose session ended, from a ring that lost a node, or
// from before another decision never lands.
//
// A node that joins between the read of nodes/ and the multi-op is not
// seen by it (ZooKeeper's check compares data versions, and joining
// changes only the children version); such a decision still names only
// live nodes, and the leader decides again from the new ring.
func (c *Conn) Commit(ctx context.Context, f topo.Fence, id string, as []topo.Assignment) (topo.Decision, error) {
	for _, a := range as {
		if err := topo.CheckAssignment(a); err != nil {
			return topo.Decision{}, fmt.Errorf("zktopo: %w", err)
		}
	}
	return do(c, ctx, func() (topo.Decision, error) { return c.commit(f, id, as) })
}

func (c *Conn) commit(f topo.Fence, id string, as []topo.Assignment) (topo.Decision, error) {
	fenced := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{topo.ErrFenced}, args...)...)
	}
	// The leadership: the first entry, owned by this session.
	dir := c.paths.Election()
	kids, _, err := c.zk.Children(dir)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return topo.Decision{}, err
	}
	sortElection(kids)
	if len(kids) == 0 || kids[0] != f.Token {
		return topo.Decision{}, fenced("%s does not lead", f.Token)
	}
	tokenPath := dir + "/" + f.Token
	ok, st, err := c.zk.Exists(tokenPath)
	if err != nil {
		return topo.Decision{}, err
	}
	if !ok || st.EphemeralOwner != c.zk.SessionID() {
		return topo.Decision{}, fenced("%s is not this session's", f.Token)
	}
	// The ring.
	ring, err := c.readRing()
	if err != nil {
		return topo.Decision{}, err
	}
	if ring.Version != f.Ring.Version {
		return topo.Decision{}, fenced("ring version %d, decided from %d", ring.Version, f.Ring.Version)
	}
	// The previous decision.
	last, err := c.readDecision()
	if err != nil {
		return topo.Decision{}, err
	}
	if last.Epoch != f.Epoch || last.RingVersion > f.Ring.Version {
		return topo.Decision{}, fenced("decision epoch %d (ring %d), decided from epoch %d (ring %d)",
			last.Epoch, last.RingVersion, f.Epoch, f.Ring.Version)
	}

	d := topo.Decision{RingVersion: f.Ring.Version, Leader: id, LeaderToken: f.Token, Time: time.Now().UTC()}
	data, err := json.Marshal(d)
	if err != nil {
		return topo.Decision{}, err
	}
	ops := []any{&zk.CheckVersionRequest{Path: tokenPath, Version: -1}}
	for _, n := range f.Ring.Nodes {
		ops = append(ops, &zk.CheckVersionRequest{Path: c.paths.Nodes() + "/" + n, Version: -1})
	}
	ops = append(ops, &zk.SetDataRequest{Path: c.paths.Decision(), Data: data, Version: int32(f.Epoch)})
	for _, a := range as {
		p := c.paths.Assignment(a.DB, a.Version)
		body, err := json.Marshal(a)
		if err != nil {
			return topo.Decision{}, err
		}
		if err := c.ensureParents(p); err != nil {
			return topo.Decision{}, err
		}
		exists, _, err := c.zk.Exists(p)
		if err != nil {
			return topo.Decision{}, err
		}
		if exists {
			ops = append(ops, &zk.SetDataRequest{Path: p, Data: body, Version: -1})
		} else {
			ops = append(ops, &zk.CreateRequest{Path: p, Data: body, Acl: c.acl.forPath(p), Flags: zk.FlagPersistent})
		}
	}
	res, err := c.zk.Multi(ops...)
	switch {
	case err == nil:
		d.Epoch = f.Epoch + 1
		if n := len(f.Ring.Nodes) + 1; n < len(res) && res[n].Stat != nil {
			d.Epoch = int64(res[n].Stat.Version)
		}
		return d, nil
	case errors.Is(err, zk.ErrNoAuth) || opFailed(res, zk.ErrNoAuth):
		return topo.Decision{}, refusedMulti(ops, res, err)
	case errors.Is(err, zk.ErrNoNode), errors.Is(err, zk.ErrBadVersion), errors.Is(err, zk.ErrNodeExists):
		return topo.Decision{}, fenced("the multi-op's checks failed: %v", err)
	}
	return topo.Decision{}, err
}
