package memtopo

import (
	"context"
	"fmt"

	"spangle/shared/dbver"
	"spangle/shared/topo"
)

// pkey names a replica entry of a version.
type pkey struct {
	v    dbver.Version
	name string
}

// Conn is one client of a Server, with its own session. It implements
// topo.Conn and is safe for concurrent use.
type Conn struct {
	srv    *Server
	mir    *topo.Mirror
	closed chan struct{} // closed by Close

	// All guarded by srv.mu.
	session  int64 // 0 while it has none
	isolated bool
	isClosed bool
	seenGen  uint64 // the Server gen of the last map published
	// What this Conn was asked to publish, re-published after faults.
	node     *topo.Node
	versions map[dbver.Version]topo.VersionInfo // as given to PublishVersion, while wanted
	pending  map[dbver.Version]bool             // versions to create at the next sync
	parts    map[pkey]struct{}
}

var _ topo.Conn = (*Conn)(nil)

// Map returns the latest map this Conn saw.
func (c *Conn) Map() *topo.Map { return c.mir.Map() }

// Wait blocks until the map's revision is greater than after, ctx ends
// or the Conn is closed (topo.ErrClosed).
func (c *Conn) Wait(ctx context.Context, after uint64) (*topo.Map, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-c.closed:
			cancel(topo.ErrClosed)
		case <-ctx.Done():
		}
	}()
	m, err := c.mir.Wait(ctx, after)
	if err != nil {
		if cause := context.Cause(ctx); cause == topo.ErrClosed {
			return nil, fmt.Errorf("memtopo: %w", topo.ErrClosed)
		}
		return nil, err
	}
	return m, nil
}

// RegisterNode implements topo.Conn.
func (c *Conn) RegisterNode(ctx context.Context, n topo.Node) error {
	if err := topo.CheckNode(&n); err != nil {
		return fmt.Errorf("memtopo: %w", err)
	}
	return c.change(ctx, func() { c.node = &n }, nil)
}

// PublishVersion implements topo.Conn.
func (c *Conn) PublishVersion(ctx context.Context, db, version string, info topo.VersionInfo) (topo.VersionInfo, error) {
	if err := topo.CheckVersion(db, version); err != nil {
		return topo.VersionInfo{}, fmt.Errorf("memtopo: %w", err)
	}
	if err := topo.CheckVersionInfo(info); err != nil {
		return topo.VersionInfo{}, fmt.Errorf("memtopo: %s/%s: %w", db, version, err)
	}
	k := dbver.Of(db, version)
	var got topo.VersionInfo
	err := c.change(ctx, func() { c.versions[k], c.pending[k] = info, true }, func() {
		got = c.srv.versions[db][version].info
	})
	if err != nil {
		return topo.VersionInfo{}, err
	}
	return got, nil
}

// PublishPartition implements topo.Conn.
func (c *Conn) PublishPartition(ctx context.Context, db, version string, partition int, addr string) error {
	if err := topo.CheckReplica(db, version, partition, addr); err != nil {
		return fmt.Errorf("memtopo: %w", err)
	}
	k := pkey{dbver.Of(db, version), topo.ReplicaName(partition, addr)}
	return c.change(ctx, func() { c.parts[k] = struct{}{} }, nil)
}

// UnpublishPartition implements topo.Conn.
func (c *Conn) UnpublishPartition(ctx context.Context, db, version string, partition int, addr string) error {
	if err := topo.CheckReplica(db, version, partition, addr); err != nil {
		return fmt.Errorf("memtopo: %w", err)
	}
	k := pkey{dbver.Of(db, version), topo.ReplicaName(partition, addr)}
	return c.change(ctx, func() {
		delete(c.parts, k)
		c.forgetVersionLocked(k.v)
	}, nil)
}

// forgetVersionLocked drops the info of a version once nothing of it is
// wanted, so that what a Conn remembers does not grow with every version
// it ever served. The caller holds srv.mu.
func (c *Conn) forgetVersionLocked(k dbver.Version) {
	if c.pending[k] {
		return
	}
	for p := range c.parts {
		if p.v == k {
			return
		}
	}
	delete(c.versions, k)
}

// Connected reports whether c has a session and reaches the service.
func (c *Conn) Connected() bool {
	s := c.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	return c.session != 0 && s.reachableLocked(c)
}

// Close ends c's session: its ephemeral entries vanish from every map.
func (c *Conn) Close() error {
	s := c.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.isClosed {
		return nil
	}
	s.endSessionLocked(c)
	c.isClosed = true
	close(c.closed)
	delete(s.conns, c)
	s.refreshLocked()
	return nil
}

// change records what c wants with want, then applies it if the service
// is reachable, else returns topo.ErrUnavailable. read, if not nil, runs
// after the change was applied, under the same lock.
func (c *Conn) change(ctx context.Context, want, read func()) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memtopo: %w", err)
	}
	s := c.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.isClosed {
		return fmt.Errorf("memtopo: %w", topo.ErrClosed)
	}
	want()
	if !s.reachableLocked(c) {
		return fmt.Errorf("memtopo: %w", topo.ErrUnavailable)
	}
	s.ensureSessionLocked(c)
	s.syncLocked(c)
	s.refreshLocked()
	if read != nil {
		read()
	}
	return nil
}
