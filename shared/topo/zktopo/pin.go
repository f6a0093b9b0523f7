package zktopo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"

	"github.com/go-zookeeper/zk"

	"spangle/shared/topo"
)

// SetPin implements topo.Coordination. It reads pins/<db> and refuses a
// generation not above the stored one, then one multi-op checks that
// the leader's election entry still exists and writes the pin at the
// data version read, so a concurrent write or a lost leadership makes it
// write nothing (ErrFenced).
func (c *Conn) SetPin(ctx context.Context, token, db string, p topo.Pin) error {
	if err := topo.CheckPin(db, p); err != nil {
		return fmt.Errorf("zktopo: %w", err)
	}
	return c.call(ctx, func() error { return c.setPin(token, db, p) })
}

func (c *Conn) setPin(token, db string, p topo.Pin) error {
	fenced := func(format string, args ...any) error {
		return fmt.Errorf("zktopo: %w: "+format, append([]any{topo.ErrFenced}, args...)...)
	}
	dir := c.paths.Election()
	kids, _, err := c.zk.Children(dir)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	sortElection(kids)
	if len(kids) == 0 || kids[0] != token {
		return fenced("%s does not lead", token)
	}
	tokenPath := dir + "/" + token
	ok, st, err := c.zk.Exists(tokenPath)
	if err != nil {
		return err
	}
	if !ok || st.EphemeralOwner != c.zk.SessionID() {
		return fenced("%s is not this session's", token)
	}
	pp := c.paths.Pin(db)
	if err := c.ensureParents(pp); err != nil {
		return err
	}
	body, err := json.Marshal(p)
	if err != nil {
		return err
	}
	ops := []any{&zk.CheckVersionRequest{Path: tokenPath, Version: -1}}
	data, pst, err := c.zk.Get(pp)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		ops = append(ops, &zk.CreateRequest{Path: pp, Data: body, Acl: c.acl.forPath(pp), Flags: zk.FlagPersistent})
	case err != nil:
		return err
	default:
		// A stored pin that fails validation is overwritten: nobody
		// follows it (every reader ignores it).
		if old, err := topo.DecodePin(db, data); err == nil && old.Generation >= p.Generation {
			return fenced("pin of %s at generation %d, not above %d", db, p.Generation, old.Generation)
		}
		ops = append(ops, &zk.SetDataRequest{Path: pp, Data: body, Version: pst.Version})
	}
	res, err := c.zk.Multi(ops...)
	switch {
	case errors.Is(err, zk.ErrNoAuth) || opFailed(res, zk.ErrNoAuth):
		return refusedMulti(ops, res, err)
	case errors.Is(err, zk.ErrNoNode), errors.Is(err, zk.ErrBadVersion), errors.Is(err, zk.ErrNodeExists):
		return fenced("the multi-op's checks failed: %v", err)
	}
	return err
}

// listPins lists pins/ and watches its children; the pins new to the
// cache are returned to be read. While pins/ does not exist (no pin was
// ever published) an exists-watch waits for its creation instead of a
// retry every second; if it was created in between, it is listed again.
func (c *Conn) listPins(ca *cache, p string) ([]string, error) {
	children, st, err := c.childrenW(p)
	if err != nil {
		return nil, err
	}
	if st == nil {
		ok, _, _, err := c.zk.ExistsW(p)
		if err != nil {
			return nil, err
		}
		if ok {
			return []string{p}, nil
		}
		clear(ca.pins)
		return nil, nil
	}
	var more []string
	seen := map[string]bool{}
	for _, db := range children {
		if !topo.ValidName(db) {
			continue
		}
		seen[db] = true
		if _, ok := ca.pins[db]; !ok {
			more = append(more, c.paths.Pin(db))
		}
	}
	for db := range ca.pins {
		if !seen[db] {
			delete(ca.pins, db)
		}
	}
	return more, nil
}

// readPin reads one pins/<db> and watches its data: a pin changes in
// place, one write per pin or unpin.
func (c *Conn) readPin(ca *cache, p string) error {
	db := path.Base(p)
	data, _, _, err := c.zk.GetW(p)
	if errors.Is(err, zk.ErrNoNode) {
		delete(ca.pins, db)
		return nil
	}
	if err != nil {
		return err
	}
	pin, err := topo.DecodePin(db, data)
	if err != nil {
		// The last valid pin, if any, stays in force.
		c.rej.reject("pin", p, err)
		return nil
	}
	c.rej.accept(p)
	ca.pins[db] = pin
	return nil
}
