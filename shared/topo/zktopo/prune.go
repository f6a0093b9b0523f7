package zktopo

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"

	"spangle/shared/topo"
)

// PruneVersion implements topo.Coordination. One multi-op deletes the
// version znode and its assignment. ZooKeeper refuses to delete a znode
// that has children (ErrNotEmpty) and applies a multi-op whole or not at
// all, so a replica created before the delete keeps both, and one
// created after finds no version znode and creates it again as a parent
// (ensureParents, with the info its Conn was given). The db znodes are
// then deleted unless they hold something, which ZooKeeper checks too.
func (c *Conn) PruneVersion(ctx context.Context, db, version string) (bool, error) {
	if err := topo.CheckVersion(db, version); err != nil {
		return false, fmt.Errorf("zktopo: %w", err)
	}
	return do(c, ctx, func() (bool, error) { return c.pruneVersion(db, version) })
}

func (c *Conn) pruneVersion(db, version string) (bool, error) {
	vpath, apath := c.paths.Version(db, version), c.paths.Assignment(db, version)
	gone := false
	for range maxAttempts {
		var ops []any
		for _, p := range []string{vpath, apath} {
			ok, st, err := c.zk.Exists(p)
			if err != nil {
				return false, err
			}
			if ok && p == vpath && st.NumChildren > 0 {
				return false, nil // served: no need to try
			}
			if ok {
				ops = append(ops, &zk.DeleteRequest{Path: p, Version: -1})
			}
		}
		if len(ops) == 0 {
			gone = true
			break
		}
		res, err := c.zk.Multi(ops...)
		if err == nil {
			gone = true
			break
		}
		switch {
		case errors.Is(err, zk.ErrNotEmpty) || opFailed(res, zk.ErrNotEmpty):
			return false, nil // a replica came meanwhile
		case errors.Is(err, zk.ErrNoNode) || opFailed(res, zk.ErrNoNode):
			continue // one of them went meanwhile: look again
		}
		return false, refusedMulti(ops, res, err)
	}
	if !gone {
		return false, fmt.Errorf("zktopo: %s kept changing under %d attempts to prune it", vpath, maxAttempts)
	}
	// The db znodes are one per db ever seen, not per version: a failure
	// here is left for the next prune of the db.
	for _, p := range []string{c.paths.DB(db), c.paths.Assignments() + "/" + db} {
		err := c.zk.Delete(p, -1)
		if err != nil && !errors.Is(err, zk.ErrNotEmpty) && !errors.Is(err, zk.ErrNoNode) {
			c.log.Info("zktopo: pruned a version but not its empty db znode", zap.String("path", p), zap.Error(err))
		}
	}
	return true, nil
}

// opFailed reports whether an operation of a failed multi-op failed with
// target.
func opFailed(res []zk.MultiResponse, target error) bool {
	for _, r := range res {
		if errors.Is(r.Error, target) {
			return true
		}
	}
	return false
}
