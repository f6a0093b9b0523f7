package zktopo

import (
	"errors"
	"fmt"
	"maps"
	"path"
	"reflect"
	"sort"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"

	"spangle/shared/topo"
)

// retryPeriod is how soon a listing that failed is tried again while a
// session is up (one that failed for want of a session waits for it).
const retryPeriod = time.Second

// cache is what the watch loop has listed. Only the watch loop uses it.
type cache struct {
	nodes map[string]topo.Node                // by entry name under nodes/
	dbs   map[string]map[string]*versionCache // db -> version
	pins  map[string]topo.Pin                 // by db, under pins/
	// listed is set once both roots have been listed, so that the first
	// map published says something.
	listedNodes, listedDBs bool

	// What changed since the last publish, so that publishing rebuilds
	// only that (see publishMap): the dbs listed again, and whether the
	// nodes or the pins were. rebuild asks for a map built from all of
	// the cache (a root vanished, or nothing was published yet).
	changedDBs                map[string]bool
	nodesChanged, pinsChanged bool
	rebuild                   bool

	// pre holds the version listings read ahead for the wave being
	// listed (prefetchVersions), each used once.
	pre map[string]*prefetched
}

// markDB notes that db's part of the cache was listed again.
func (ca *cache) markDB(db string) {
	if ca.changedDBs == nil {
		ca.changedDBs = map[string]bool{}
	}
	ca.changedDBs[db] = true
}

type versionCache struct {
	info topo.VersionInfo // zero until the znode holds it
	// czxid is the znode's creation: a version pruned and created again
	// (while a session was away, say) has another, and its info is read
	// again.
	czxid    int64
	replicas []string // entry names <partition>@<addr>
}

// watchLoop lists what changed, re-arming the watches, and publishes the
// map when it differs. It is the only user of the cache.
func (c *Conn) watchLoop() {
	defer c.wg.Done()
	ca := &cache{nodes: map[string]topo.Node{}, dbs: map[string]map[string]*versionCache{}, pins: map[string]topo.Pin{}}
	retry := time.NewTimer(retryPeriod)
	retry.Stop()
	defer retry.Stop()
	for {
		select {
		case <-c.closed:
			return
		case <-c.watchKick:
		case <-retry.C:
		}
		queue := c.takeDirty(ca)
		failed := false
		// In waves: what a wave's listings find (the versions of a db
		// listed for the first time) is the next wave.
		for len(queue) > 0 {
			wave := queue
			queue = nil
			if c.Connected() {
				ca.pre = c.prefetchVersions(ca, wave)
			}
			for _, p := range wave {
				if !c.Connected() {
					// Requests would only wait for a session: keep the rest
					// for when one is up (its event kicks this loop).
					c.markDirty(p)
					failed = true
					continue
				}
				more, err := c.list(ca, p)
				if err != nil {
					c.markDirty(p)
					failed = true
					switch {
					case errors.Is(err, zk.ErrNoAuth):
						c.noteDenied(refused("listing", p, err))
					case !isConnErr(err) && !errors.Is(err, errNoRoot):
						c.log.Warn("zktopo: listing", zap.String("path", p), zap.Error(err))
					}
					continue
				}
				queue = append(queue, more...)
			}
			ca.pre = nil
		}
		c.publishMap(ca)
		if failed && c.Connected() {
			retry.Reset(retryPeriod)
		}
	}
}

// takeDirty returns the paths to list, every known one after a new
// session, and clears the set.
func (c *Conn) takeDirty(ca *cache) []string {
	c.evMu.Lock()
	defer c.evMu.Unlock()
	if c.resyncAll {
		c.resyncAll = false
		c.dirty[c.paths.Nodes()] = true
		c.dirty[c.paths.Partitions()] = true
		c.dirty[c.paths.Pins()] = true
		for db := range ca.pins {
			c.dirty[c.paths.Pin(db)] = true
		}
		for db, vs := range ca.dbs {
			c.dirty[c.paths.DB(db)] = true
			for v := range vs {
				c.dirty[c.paths.Version(db, v)] = true
			}
		}
	}
	queue := make([]string, 0, len(c.dirty))
	for p := range c.dirty {
		queue = append(queue, p)
	}
	clear(c.dirty)
	sort.Strings(queue) // parents before children
	return queue
}

func (c *Conn) markDirty(p string) {
	c.evMu.Lock()
	defer c.evMu.Unlock()
	c.dirty[p] = true
}

// list lists one watched path into the cache, watching it again, and
// returns the paths that became known under it.
func (c *Conn) list(ca *cache, p string) ([]string, error) {
	parts := c.paths.Partitions()
	switch {
	case p == c.paths.Pins():
		ca.pinsChanged = true
		return c.listPins(ca, p)
	case path.Dir(p) == c.paths.Pins():
		ca.pinsChanged = true
		return nil, c.readPin(ca, p)
	case p == c.paths.Nodes():
		ca.nodesChanged = true
		return c.listNodes(ca, p)
	case p == parts:
		return c.listDBs(ca, p)
	case path.Dir(p) == parts:
		ca.markDB(path.Base(p))
		return c.listDB(ca, path.Base(p), p)
	case path.Dir(path.Dir(p)) == parts:
		ca.markDB(path.Base(path.Dir(p)))
		return nil, c.listVersion(ca, path.Base(path.Dir(p)), path.Base(p), p)
	}
	return nil, nil // an event of a path this loop does not follow
}

// errNoRoot says a root (nodes/ or partitions/) does not exist yet. It
// is listed again every retryPeriod rather than watched for creation:
// an exists-watch set just after the root appears would stay for good.
var errNoRoot = errors.New("zktopo: root not created yet")

// childrenW lists p's children and watches them. A missing p yields no
// children and a nil stat.
func (c *Conn) childrenW(p string) (children []string, st *zk.Stat, err error) {
	children, st, _, err = c.zk.ChildrenW(p)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	return children, st, nil
}

func (c *Conn) listNodes(ca *cache, p string) ([]string, error) {
	children, st, err := c.childrenW(p)
	if err != nil {
		return nil, err
	}
	if st == nil {
		ca.nodes, ca.listedNodes = map[string]topo.Node{}, true
		return nil, errNoRoot
	}
	next := make(map[string]topo.Node, len(children))
	for _, name := range children {
		if n, ok := ca.nodes[name]; ok {
			next[name] = n
			continue
		}
		np := p + "/" + name
		if _, err := topo.DecodeNode(name, nil); err != nil {
			c.rej.reject("node", np, err)
			continue
		}
		// The entry's data never changes (a new registration is a new
		// znode), so it is read once and not watched.
		data, _, err := c.zk.Get(np)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		n, err := topo.DecodeNode(name, data)
		if err != nil {
			c.rej.reject("node", np, err)
			continue
		}
		c.rej.accept(np)
		next[name] = n
	}
	ca.nodes = next
	ca.listedNodes = true
	return nil, nil
}

func (c *Conn) listDBs(ca *cache, p string) ([]string, error) {
	children, st, err := c.childrenW(p)
	if err != nil {
		return nil, err
	}
	if st == nil {
		clear(ca.dbs)
		ca.listedDBs = true
		ca.rebuild = true
		return nil, errNoRoot
	}
	var more []string
	seen := map[string]bool{}
	for _, db := range children {
		if !topo.ValidName(db) {
			continue
		}
		seen[db] = true
		if _, ok := ca.dbs[db]; !ok {
			ca.dbs[db] = map[string]*versionCache{}
			ca.markDB(db)
			more = append(more, c.paths.DB(db))
		}
	}
	for db := range ca.dbs {
		if !seen[db] {
			delete(ca.dbs, db)
			ca.markDB(db)
		}
	}
	ca.listedDBs = true
	return more, nil
}

func (c *Conn) listDB(ca *cache, db, p string) ([]string, error) {
	vs, ok := ca.dbs[db]
	if !ok {
		return nil, nil // gone, or not listed under partitions/ yet
	}
	children, st, err := c.childrenW(p)
	if err != nil {
		return nil, err
	}
	if st == nil {
		delete(ca.dbs, db)
		return nil, nil
	}
	var more []string
	seen := map[string]bool{}
	for _, v := range children {
		if !topo.ValidName(v) {
			continue
		}
		seen[v] = true
		if _, ok := vs[v]; !ok {
			vs[v] = &versionCache{}
			more = append(more, c.paths.Version(db, v))
		}
	}
	for v := range vs {
		if !seen[v] {
			delete(vs, v)
		}
	}
	return more, nil
}

func (c *Conn) listVersion(ca *cache, db, version, p string) error {
	vc, ok := ca.dbs[db][version]
	if !ok {
		return nil
	}
	pre := ca.pre[p]
	delete(ca.pre, p)
	var (
		children []string
		st       *zk.Stat
		err      error
	)
	if pre != nil {
		children, st, err = pre.children, pre.st, pre.err
	} else {
		children, st, err = c.childrenW(p)
	}
	if err != nil {
		return err
	}
	if st == nil {
		// Pruned: its watch went with it.
		delete(ca.dbs[db], version)
		return nil
	}
	if st.Czxid != vc.czxid {
		vc.info, vc.czxid = topo.VersionInfo{}, st.Czxid
	}
	vc.replicas = vc.replicas[:0]
	for _, name := range children {
		if _, _, err := topo.ParseReplicaName(name); err != nil {
			c.rej.reject("replica", p+"/"+name, fmt.Errorf("%w: %w", topo.ErrInvalid, err))
			continue
		}
		vc.replicas = append(vc.replicas, name)
	}
	if vc.info.NumPartitions < 1 {
		// Read once; watched only while it holds no valid info, since
		// the info never changes once written. Info that fails
		// validation is ignored (the version stays out of the map) until
		// the entry is written again or deleted.
		var data []byte
		if pre != nil && (pre.data != nil || pre.dataErr != nil) && st.Czxid == pre.st.Czxid {
			data, err = pre.data, pre.dataErr
		} else {
			data, _, err = c.zk.Get(p)
		}
		if err == nil {
			if info, ok := c.versionInfo(p, data); ok {
				vc.info = info
			} else {
				data, _, _, err = c.zk.GetW(p)
				if err == nil {
					vc.info, _ = c.versionInfo(p, data)
				}
			}
		}
		if errors.Is(err, zk.ErrNoNode) {
			delete(ca.dbs[db], version)
			return nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// prefetched is a version entry's listing (and its data, when its info
// was not known) read ahead of listVersion.
type prefetched struct {
	children []string
	st       *zk.Stat
	err      error
	data     []byte // nil: not read
	dataErr  error
}

// prefetchVersions lists the version entries among paths that the cache
// knows, maxReads at a time, watching them as childrenW does, and reads
// the data of those whose info is not known. One listing after another,
// each a round trip to a server that may be busy, a node took seconds to
// follow a start with 500 dbs registering partitions, most of it waiting;
// sent together they share the round trips. The cache itself is still
// changed by listVersion alone, in order.
func (c *Conn) prefetchVersions(ca *cache, paths []string) map[string]*prefetched {
	parts := c.paths.Partitions()
	var todo []string
	for _, p := range paths {
		if path.Dir(path.Dir(p)) == parts {
			if _, ok := ca.dbs[path.Base(path.Dir(p))][path.Base(p)]; ok {
				todo = append(todo, p)
			}
		}
	}
	if len(todo) < 2 {
		return nil
	}
	out := make(map[string]*prefetched, len(todo))
	for _, p := range todo {
		out[p] = &prefetched{}
	}
	sem := make(chan struct{}, maxReads)
	var wg sync.WaitGroup
	for _, p := range todo {
		vc := ca.dbs[path.Base(path.Dir(p))][path.Base(p)]
		needInfo := vc.info.NumPartitions < 1
		r := out[p]
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			r.children, r.st, r.err = c.childrenW(p)
			if r.err == nil && r.st != nil && needInfo {
				r.data, _, r.dataErr = c.zk.Get(p)
				if r.dataErr == nil && r.data == nil {
					r.data = []byte{}
				}
			}
		}()
	}
	wg.Wait()
	return out
}

// versionInfo decodes a version entry's data, saying so when it fails
// validation (empty data is no info yet, not a failure).
func (c *Conn) versionInfo(p string, data []byte) (topo.VersionInfo, bool) {
	info, err := topo.DecodeVersionInfo(data)
	switch {
	case err == nil:
		c.rej.accept(p)
		return info, true
	case !errors.Is(err, topo.ErrNoInfo):
		c.rej.reject("version", p, err)
	}
	return topo.VersionInfo{}, false
}

// publishMap publishes the cache as a map if it says something new.
//
// A change costs what it touched, not the whole cluster: the next map
// shares with the current one (maps are immutable once published) every
// db not listed again since, rebuilds the dbs that were, and compares only
// those; the nodes and the pins likewise. What is left in proportion to
// all dbs is one copy of the db -> versions index (pointers), made only
// when some db did change. The first map, and any after a root vanished,
// is built from all of the cache.
func (c *Conn) publishMap(ca *cache) {
	cur := c.mir.Map()
	if cur.Revision == 0 && !(ca.listedNodes && ca.listedDBs) {
		return
	}
	defer ca.clearChanges()
	if cur.Revision == 0 || ca.rebuild {
		c.publishWhole(ca, cur)
		return
	}
	next := &topo.Map{Nodes: cur.Nodes, DBs: cur.DBs, Pins: cur.Pins}
	changed := false
	if ca.nodesChanged {
		if nodes := buildNodes(ca); !reflect.DeepEqual(nodes, cur.Nodes) {
			next.Nodes, changed = nodes, true
		}
	}
	if ca.pinsChanged {
		if pins := buildPins(ca); !reflect.DeepEqual(pins, cur.Pins) {
			next.Pins, changed = pins, true
		}
	}
	var dbs map[string]map[string]*topo.Version // cur.DBs copied on the first db that differs
	for db := range ca.changedDBs {
		vs := buildDB(ca, db)
		if reflect.DeepEqual(vs, cur.DBs[db]) {
			continue
		}
		if dbs == nil {
			dbs = maps.Clone(cur.DBs)
		}
		if vs == nil {
			delete(dbs, db)
		} else {
			dbs[db] = vs
		}
	}
	if dbs != nil {
		next.DBs, changed = dbs, true
	}
	if changed {
		c.mir.Publish(next)
	}
}

// publishWhole publishes a map built from all of the cache, if it
// differs from cur.
func (c *Conn) publishWhole(ca *cache, cur *topo.Map) {
	next := &topo.Map{Nodes: buildNodes(ca), DBs: make(map[string]map[string]*topo.Version, len(ca.dbs)), Pins: buildPins(ca)}
	for db := range ca.dbs {
		if vs := buildDB(ca, db); vs != nil {
			next.DBs[db] = vs
		}
	}
	if cur.Revision > 0 && reflect.DeepEqual(cur.Nodes, next.Nodes) && reflect.DeepEqual(cur.DBs, next.DBs) && reflect.DeepEqual(cur.Pins, next.Pins) {
		return
	}
	c.mir.Publish(next)
}

func (ca *cache) clearChanges() {
	clear(ca.changedDBs)
	ca.nodesChanged, ca.pinsChanged, ca.rebuild = false, false, false
}

func buildNodes(ca *cache) map[string]topo.Node {
	nodes := make(map[string]topo.Node, len(ca.nodes))
	for _, n := range ca.nodes {
		nodes[n.Addr] = n
	}
	return nodes
}

// buildPins is the map's Pins: nil when none was ever published.
func buildPins(ca *cache) map[string]topo.Pin {
	if len(ca.pins) == 0 {
		return nil
	}
	return maps.Clone(ca.pins)
}

// buildDB is db's versions as the map holds them (topo.Builder's rules),
// nil when it has none with a known partition count.
func buildDB(ca *cache, db string) map[string]*topo.Version {
	var b topo.Builder
	for v, vc := range ca.dbs[db] {
		b.AddVersion(db, v, vc.info)
		for _, name := range vc.replicas {
			// Only partitions of a count known valid: Build would drop
			// the others after AddReplica grew the lists for them.
			if p, addr, err := topo.ParseReplicaName(name); err == nil && p < vc.info.NumPartitions {
				b.AddReplica(db, v, p, addr)
			}
		}
	}
	return b.Build(0).DBs[db]
}
