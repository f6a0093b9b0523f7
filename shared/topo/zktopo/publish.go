package zktopo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"

	"spangle/shared/topo"
)

// maxAttempts bounds the create/replace races of one write.
const maxAttempts = 5

// RegisterNode implements topo.Conn.
func (c *Conn) RegisterNode(ctx context.Context, n topo.Node) error {
	if err := topo.CheckNode(&n); err != nil {
		return fmt.Errorf("zktopo: %w", err)
	}
	data, err := json.Marshal(n)
	if err != nil {
		return fmt.Errorf("zktopo: %w", err)
	}
	path := c.paths.Nodes() + "/" + topo.NodeName(n.ShardID, n.Addr)
	c.mu.Lock()
	if c.isClosed {
		c.mu.Unlock()
		return fmt.Errorf("zktopo: %w", topo.ErrClosed)
	}
	old := c.nodePath
	c.nodePath, c.nodeData = path, data
	c.mu.Unlock()
	return c.apply(ctx, func() error {
		if old != "" && old != path {
			if err := c.syncEphemeral(old); err != nil {
				return err
			}
		}
		return c.syncEphemeral(path)
	})
}

// PublishVersion implements topo.Conn.
func (c *Conn) PublishVersion(ctx context.Context, db, version string, info topo.VersionInfo) (topo.VersionInfo, error) {
	if err := topo.CheckVersion(db, version); err != nil {
		return topo.VersionInfo{}, fmt.Errorf("zktopo: %w", err)
	}
	if err := topo.CheckVersionInfo(info); err != nil {
		return topo.VersionInfo{}, fmt.Errorf("zktopo: %s/%s: %w", db, version, err)
	}
	path := c.paths.Version(db, version)
	data, err := json.Marshal(info)
	if err != nil {
		return topo.VersionInfo{}, fmt.Errorf("zktopo: %w", err)
	}
	c.mu.Lock()
	if c.isClosed {
		c.mu.Unlock()
		return topo.VersionInfo{}, fmt.Errorf("zktopo: %w", topo.ErrClosed)
	}
	c.infos[path] = info
	c.pending[path] = true
	c.mu.Unlock()
	// Most versions are published by another node first: a read, which
	// the server answers without a write to its log and which needs not
	// wait for this Conn's writes, tells.
	withParent := false
	if c.Connected() {
		old, _, err := c.zk.Get(path)
		if err == nil {
			if have, ok := c.versionInfo(path, old); ok {
				c.donePending(path)
				return have, nil
			}
		} else if errors.Is(err, zk.ErrNoNode) {
			ok, _, err := c.zk.Exists(c.paths.DB(db))
			withParent = err == nil && !ok
		}
	}
	c.mu.Lock()
	c.queueVersionLocked(path, data, withParent)
	c.mu.Unlock()
	var (
		got   topo.VersionInfo
		found bool
	)
	err = c.apply(ctx, func() error {
		c.flushQueued()
		c.mu.Lock()
		done := c.vdone[path]
		delete(c.vdone, path)
		found = c.vfound[path]
		delete(c.vfound, path)
		c.mu.Unlock()
		if done {
			got = info
			return nil
		}
		if found {
			return nil // read below, without the semaphore
		}
		var err error
		got, err = c.createVersion(path, info)
		return err
	})
	if err != nil {
		return topo.VersionInfo{}, err
	}
	if found {
		// Another node created it while this one looked: the batch
		// found it there. Reads go out together (the many versions of a
		// start each in their own call), where creating each one alone
		// under the semaphore cost two round trips after another.
		if old, _, err := c.zk.Get(path); err == nil {
			if have, ok := c.versionInfo(path, old); ok {
				c.donePending(path)
				return have, nil
			}
		}
		// Gone again, unreadable, or holding no valid info: as before.
		err = c.apply(ctx, func() error {
			var err error
			got, err = c.createVersion(path, info)
			return err
		})
		if err != nil {
			return topo.VersionInfo{}, err
		}
	}
	return got, nil
}

// PublishPartition implements topo.Conn.
func (c *Conn) PublishPartition(ctx context.Context, db, version string, partition int, addr string) error {
	return c.setPartition(ctx, db, version, partition, addr, true)
}

// UnpublishPartition implements topo.Conn.
func (c *Conn) UnpublishPartition(ctx context.Context, db, version string, partition int, addr string) error {
	return c.setPartition(ctx, db, version, partition, addr, false)
}

func (c *Conn) setPartition(ctx context.Context, db, version string, partition int, addr string, want bool) error {
	if err := topo.CheckReplica(db, version, partition, addr); err != nil {
		return fmt.Errorf("zktopo: %w", err)
	}
	vpath := c.paths.Version(db, version)
	path := vpath + "/" + topo.ReplicaName(partition, addr)
	c.mu.Lock()
	if c.isClosed {
		c.mu.Unlock()
		return fmt.Errorf("zktopo: %w", topo.ErrClosed)
	}
	if want {
		c.parts[path] = vpath
		c.queueEphemeralLocked(path)
	} else {
		delete(c.parts, path)
		delete(c.equeue, path)
		c.forgetVersionLocked(vpath)
	}
	c.mu.Unlock()
	return c.apply(ctx, func() error {
		if want {
			c.flushQueued()
		}
		return c.syncEphemeral(path)
	})
}

// forgetVersionLocked drops the remembered info of a version once
// nothing of it is wanted any more, so that what a Conn remembers does
// not grow with every version it ever served.
func (c *Conn) forgetVersionLocked(vpath string) {
	if c.pending[vpath] {
		return
	}
	for _, v := range c.parts {
		if v == vpath {
			return
		}
	}
	delete(c.infos, vpath)
}

// apply runs a write if a session is up, else returns ErrUnavailable at
// once: what the caller asked is remembered and applied with the next
// session. The write holds the write semaphore; ctx bounds the wait for
// it, not the write, which ends by itself when the connection does.
func (c *Conn) apply(ctx context.Context, write func() error) error {
	if !c.Connected() {
		select {
		case <-c.closed:
			return fmt.Errorf("zktopo: %w", topo.ErrClosed)
		default:
		}
		return fmt.Errorf("zktopo: %w: no session", topo.ErrUnavailable)
	}
	c.mu.Lock()
	if c.isClosed {
		c.mu.Unlock()
		return fmt.Errorf("zktopo: %w", topo.ErrClosed)
	}
	c.wg.Add(1) // before Close waits: Close sets isClosed first
	c.mu.Unlock()
	res := make(chan error, 1)
	go func() {
		defer c.wg.Done()
		c.sem <- struct{}{}
		defer func() { <-c.sem }()
		res <- write()
	}()
	select {
	case err := <-res:
		if errors.Is(err, zk.ErrNoAuth) {
			c.noteDenied(err)
		}
		return c.mapErr(err)
	case <-ctx.Done():
		return c.mapErr(ctx.Err())
	}
}

// syncEphemeral makes the ephemeral znode at path exist with this
// session as owner if it is wanted, and not exist otherwise. The caller
// holds the write semaphore.
func (c *Conn) syncEphemeral(path string) error {
	c.mu.Lock()
	var data []byte
	want := false
	if path == c.nodePath {
		data, want = c.nodeData, true
	} else if _, ok := c.parts[path]; ok {
		want = true
	}
	sess := c.zk.SessionID()
	done := sess != 0 && c.published[path] == sess
	c.mu.Unlock()
	if !want {
		err := c.zk.Delete(path, -1)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return refused("deleting", path, err)
		}
		c.mu.Lock()
		delete(c.published, path)
		c.mu.Unlock()
		return nil
	}
	if done {
		return nil
	}
	if err := c.createEphemeral(path, data); err != nil {
		return err
	}
	c.mu.Lock()
	c.published[path] = sess
	c.mu.Unlock()
	return nil
}

// createEphemeral creates path owned by this session. A znode left there
// by an earlier session (a restart within the session timeout) is
// replaced, since it would vanish when that session expires.
func (c *Conn) createEphemeral(path string, data []byte) error {
	for range maxAttempts {
		_, err := c.zk.Create(path, data, zk.FlagEphemeral, c.acl.forPath(path))
		switch {
		case err == nil:
			return nil
		case errors.Is(err, zk.ErrNoNode):
			if err := c.ensureParents(path); err != nil {
				return err
			}
		case errors.Is(err, zk.ErrNodeExists):
			old, st, err := c.zk.Get(path)
			if errors.Is(err, zk.ErrNoNode) {
				continue
			}
			if err != nil {
				return refused("reading", path, err)
			}
			if st.EphemeralOwner == c.zk.SessionID() && bytes.Equal(old, data) {
				return nil
			}
			c.log.Info("zktopo: replacing a znode of an earlier session", zap.String("path", path))
			err = c.zk.Delete(path, st.Version)
			if err != nil && !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, zk.ErrBadVersion) {
				return refused("replacing", path, err)
			}
		default:
			return refused("creating", path, err)
		}
	}
	return fmt.Errorf("zktopo: %s kept changing under %d attempts to create it", path, maxAttempts)
}

// createVersion creates the persistent version znode holding info unless
// it holds info already, and returns the info it holds.
func (c *Conn) createVersion(path string, info topo.VersionInfo) (topo.VersionInfo, error) {
	data, err := json.Marshal(info)
	if err != nil {
		return topo.VersionInfo{}, err
	}
	for range maxAttempts {
		_, err := c.zk.Create(path, data, zk.FlagPersistent, c.acl.forPath(path))
		switch {
		case err == nil:
			c.donePending(path)
			return info, nil
		case errors.Is(err, zk.ErrNoNode):
			if err := c.ensureParents(path); err != nil {
				return topo.VersionInfo{}, err
			}
		case errors.Is(err, zk.ErrNodeExists):
			old, st, err := c.zk.Get(path)
			if errors.Is(err, zk.ErrNoNode) {
				continue
			}
			if err != nil {
				return topo.VersionInfo{}, refused("reading", path, err)
			}
			if have, ok := c.versionInfo(path, old); ok {
				c.donePending(path)
				return have, nil
			}
			// Created as a parent before anyone gave its info, or holding
			// info that fails validation: fill it in, unless someone else
			// does first.
			_, err = c.zk.Set(path, data, st.Version)
			if err == nil {
				c.donePending(path)
				return info, nil
			}
			if !errors.Is(err, zk.ErrBadVersion) && !errors.Is(err, zk.ErrNoNode) {
				return topo.VersionInfo{}, refused("writing", path, err)
			}
		default:
			return topo.VersionInfo{}, refused("creating", path, err)
		}
	}
	return topo.VersionInfo{}, fmt.Errorf("zktopo: %s kept changing under %d attempts to publish it", path, maxAttempts)
}

func (c *Conn) donePending(path string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pending, path)
}

// ensureParents creates the persistent ancestors of path that are
// missing. A version znode created this way holds the info this Conn was
// given for it, if any. An ancestor deleted while it works (a db znode
// pruned as it emptied) makes it start again from the top.
func (c *Conn) ensureParents(path string) error {
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	for range maxAttempts {
		err := c.createParents(parts)
		if !errors.Is(err, zk.ErrNoNode) {
			return err
		}
	}
	return fmt.Errorf("zktopo: the parents of %s kept vanishing under %d attempts to create them", path, maxAttempts)
}

func (c *Conn) createParents(parts []string) error {
	for i := 1; i < len(parts); i++ {
		p := "/" + strings.Join(parts[:i], "/")
		var data []byte
		c.mu.Lock()
		if info, ok := c.infos[p]; ok {
			data, _ = json.Marshal(info)
		}
		c.mu.Unlock()
		_, err := c.zk.Create(p, data, zk.FlagPersistent, c.acl.forPath(p))
		if errors.Is(err, zk.ErrNoAuth) {
			// ZooKeeper checks the parent's ACL before whether p
			// exists: a parent that is not ours (a shared prefix) may
			// refuse creating what is there already.
			if ok, _, xerr := c.zk.Exists(p); xerr == nil && ok {
				continue
			}
		}
		if err == nil {
			// A root may be new: the watch loop lists it now rather
			// than at its next retry.
			c.markDirty(p)
			kick(c.watchKick)
		} else if !errors.Is(err, zk.ErrNodeExists) {
			return refused("creating", p, err)
		}
	}
	return nil
}

// syncLoop publishes everything again whenever a session comes up: after
// an expiry the new session owns nothing, and after an outage some calls
// have been waiting.
func (c *Conn) syncLoop() {
	defer c.wg.Done()
	for {
		select {
		case <-c.closed:
			return
		case <-c.syncKick:
		}
		c.republish()
	}
}

func (c *Conn) republish() {
	c.mu.Lock()
	var versions, ephemerals []string
	for p := range c.pending {
		versions = append(versions, p)
	}
	if c.nodePath != "" {
		ephemerals = append(ephemerals, c.nodePath)
	}
	for p := range c.parts {
		ephemerals = append(ephemerals, p)
	}
	for p := range c.published { // unpublished while away
		if _, ok := c.parts[p]; !ok && p != c.nodePath {
			ephemerals = append(ephemerals, p)
		}
	}
	c.mu.Unlock()
	if len(versions)+len(ephemerals) == 0 {
		return
	}
	sort.Strings(versions)
	sort.Strings(ephemerals)
	for _, p := range versions {
		c.mu.Lock()
		info, ok := c.infos[p]
		c.mu.Unlock()
		if ok && !c.syncOne(p, func() error { _, err := c.createVersion(p, info); return err }) {
			return
		}
	}
	// The replica entries wanted go in batches first; what a batch could
	// not create is then written alone.
	c.mu.Lock()
	for p := range c.parts {
		c.queueEphemeralLocked(p)
	}
	c.mu.Unlock()
	if !c.syncOne("(batch)", func() error { c.flushQueued(); return nil }) {
		return
	}
	for _, p := range ephemerals {
		if !c.syncOne(p, func() error { return c.syncEphemeral(p) }) {
			return
		}
	}
	c.log.Info("zktopo: published again after a session came up",
		zap.Int("versions", len(versions)), zap.Int("ephemerals", len(ephemerals)))
}

// syncOne runs one write of republish under the write semaphore. It
// reports false when republish should stop: closed, or the session went
// away again (the next session will kick it).
func (c *Conn) syncOne(path string, write func() error) bool {
	select {
	case <-c.closed:
		return false
	case c.sem <- struct{}{}:
	}
	err := write()
	<-c.sem
	if err == nil {
		return true
	}
	if isConnErr(err) {
		c.log.Info("zktopo: publishing again interrupted; the next session resumes", zap.String("path", path), zap.Error(err))
		return false
	}
	if errors.Is(err, zk.ErrNoAuth) {
		c.noteDenied(err)
		return true
	}
	c.log.Warn("zktopo: publishing again", zap.String("path", path), zap.Error(err))
	return true
}
