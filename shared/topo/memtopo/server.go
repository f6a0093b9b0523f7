package memtopo

import (
	"sync"

	"spangle/shared/dbver"
	"spangle/shared/topo"
)

// Server is the in-memory coordination service. Its methods are safe for
// concurrent use.
type Server struct {
	mu       sync.Mutex
	down     bool                                // guarded by mu
	gen      uint64                              // guarded by mu; bumped by every change of the entries
	nextSess int64                               // guarded by mu
	nodes    map[string]nodeEntry                // guarded by mu; by entry name <shard_id>@<addr>
	versions map[string]map[string]*versionEntry // guarded by mu; db -> version
	conns    map[*Conn]struct{}                  // guarded by mu; open Conns
	coord    *coordState                         // guarded by mu; elections and decisions, see coord.go
}

// nodeEntry is an ephemeral nodes/ entry and the session that owns it.
type nodeEntry struct {
	node  topo.Node
	owner int64
}

// versionEntry is a persistent partitions/<db>/<version> entry and its
// ephemeral replica entries, by name, with their owning sessions.
type versionEntry struct {
	info     topo.VersionInfo
	replicas map[string]int64
}

// NewServer returns a service that is up and holds nothing.
func NewServer() *Server {
	return &Server{
		nodes:    map[string]nodeEntry{},
		versions: map[string]map[string]*versionEntry{},
		conns:    map[*Conn]struct{}{},
	}
}

// Conn returns a new client with its own session.
func (s *Server) Conn() *Conn {
	c := &Conn{
		srv:      s,
		mir:      topo.NewMirror(),
		closed:   make(chan struct{}),
		versions: map[dbver.Version]topo.VersionInfo{},
		pending:  map[dbver.Version]bool{},
		parts:    map[pkey]struct{}{},
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conns[c] = struct{}{}
	if s.reachableLocked(c) {
		s.ensureSessionLocked(c)
		s.publishLocked(c)
	}
	return c
}

// Watcher returns a new read-only client, as a router would hold. It is
// a Conn that publishes nothing; faults apply to it as to any Conn.
func (s *Server) Watcher() *Conn { return s.Conn() }

// SetDown makes the whole service unreachable (true) or brings it back
// (false). While it is down, every call returns topo.ErrUnavailable and
// every map stays as it was; sessions survive, as they do a short
// ZooKeeper outage. When it is back, each Conn applies what it was asked
// meanwhile, and maps catch up.
func (s *Server) SetDown(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = down
	if !down {
		s.resumeLocked()
	}
}

// Isolate cuts c off the service (true) or lets it reach it again
// (false), while the other Conns go on. An isolated Conn behaves as
// during an outage; its session is kept unless Expire ends it.
func (s *Server) Isolate(c *Conn, isolated bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c.isolated = isolated
	if !isolated {
		s.resumeLocked()
	}
}

// Expire ends c's session as the service would after a session timeout:
// its ephemeral entries vanish from every map. c starts a new session
// and publishes everything again as soon as it reaches the service: at
// once, unless it is isolated or the service is down. To observe the
// entries gone, isolate c first.
func (s *Server) Expire(c *Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.endSessionLocked(c)
	s.refreshLocked()
	if s.reachableLocked(c) {
		s.ensureSessionLocked(c)
		s.syncLocked(c)
		s.refreshLocked()
	}
}

// resumeLocked gives every reachable Conn a session, applies what each
// wants and refreshes the maps.
func (s *Server) resumeLocked() {
	for c := range s.conns {
		if s.reachableLocked(c) {
			s.ensureSessionLocked(c)
			s.syncLocked(c)
		}
	}
	s.refreshLocked()
}

func (s *Server) reachableLocked(c *Conn) bool {
	return !s.down && !c.isolated && !c.isClosed
}

// ensureSessionLocked gives c a session if it has none.
func (s *Server) ensureSessionLocked(c *Conn) {
	if c.session == 0 {
		s.nextSess++
		c.session = s.nextSess
	}
}

// endSessionLocked removes every entry c's session owns.
func (s *Server) endSessionLocked(c *Conn) {
	if c.session == 0 {
		return
	}
	for name, e := range s.nodes {
		if e.owner == c.session {
			delete(s.nodes, name)
			s.gen++
		}
	}
	for _, vs := range s.versions {
		for _, v := range vs {
			for name, owner := range v.replicas {
				if owner == c.session {
					delete(v.replicas, name)
					s.gen++
				}
			}
		}
	}
	c.session = 0
}

// syncLocked makes the entries c's session owns what c wants. c must be
// reachable and hold a session.
func (s *Server) syncLocked(c *Conn) {
	// Nodes: at most one, the last registered.
	want := ""
	if c.node != nil {
		want = topo.NodeName(c.node.ShardID, c.node.Addr)
	}
	for name, e := range s.nodes {
		if e.owner == c.session && name != want {
			delete(s.nodes, name)
			s.gen++
		}
	}
	if want != "" {
		if e, ok := s.nodes[want]; !ok || e.owner != c.session || e.node != *c.node {
			s.nodes[want] = nodeEntry{node: *c.node, owner: c.session}
			s.gen++
		}
	}
	// Versions given to PublishVersion: created if absent, and filled if
	// they hold no info, once. Later only a wanted replica creates one
	// again (as a ZooKeeper parent), so that a pruned version stays gone
	// unless someone serves it.
	for k := range c.pending {
		v := s.versionLocked(k.DB, k.Version, c.versions)
		if v.info.NumPartitions <= 0 {
			v.info = c.versions[k]
			s.gen++
		}
		delete(c.pending, k)
	}
	// Replicas: drop the unwanted ones this session owns, add the wanted.
	for db, vs := range s.versions {
		for version, v := range vs {
			for name, owner := range v.replicas {
				if owner != c.session {
					continue
				}
				if _, ok := c.parts[pkey{dbver.Of(db, version), name}]; !ok {
					delete(v.replicas, name)
					s.gen++
				}
			}
		}
	}
	for k := range c.parts {
		v := s.versionLocked(k.v.DB, k.v.Version, c.versions)
		if owner, ok := v.replicas[k.name]; !ok || owner != c.session {
			v.replicas[k.name] = c.session
			s.gen++
		}
	}
}

// versionLocked returns the version entry, creating it with the info
// infos holds for it, if any (else none, for a PublishVersion to fill).
func (s *Server) versionLocked(db, version string, infos map[dbver.Version]topo.VersionInfo) *versionEntry {
	vs := s.versions[db]
	if vs == nil {
		vs = map[string]*versionEntry{}
		s.versions[db] = vs
	}
	v := vs[version]
	if v == nil {
		v = &versionEntry{info: infos[dbver.Of(db, version)], replicas: map[string]int64{}}
		vs[version] = v
		s.gen++
	}
	return v
}

// refreshLocked publishes a new map to every reachable Conn whose map is
// older than the entries.
func (s *Server) refreshLocked() {
	for c := range s.conns {
		if s.reachableLocked(c) {
			s.publishLocked(c)
		}
	}
}

func (s *Server) publishLocked(c *Conn) {
	if c.seenGen == s.gen && c.mir.Map().Revision > 0 {
		return
	}
	c.seenGen = s.gen
	c.mir.Publish(s.buildLocked())
}

// buildLocked makes a Map of the entries.
func (s *Server) buildLocked() *topo.Map {
	var b topo.Builder
	for _, e := range s.nodes {
		b.AddNode(e.node)
	}
	for db, vs := range s.versions {
		for version, v := range vs {
			b.AddVersion(db, version, v.info)
			for name := range v.replicas {
				p, addr, err := topo.ParseReplicaName(name)
				if err == nil {
					b.AddReplica(db, version, p, addr)
				}
			}
		}
	}
	if s.coord != nil {
		for db, p := range s.coord.pins {
			b.AddPin(db, p)
		}
	}
	return b.Build(0)
}
