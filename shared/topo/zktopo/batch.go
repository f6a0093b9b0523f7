package zktopo

import (
	"errors"
	pathpkg "path"
	"sort"
	"sync"

	"github.com/go-zookeeper/zk"
)

// Bounds of one multi-op. ZooKeeper refuses a request larger than its
// jute.maxbuffer (1 MiB by default), and the answer of a multi-op holds
// a result per operation; a chunk stays well within both.
const (
	maxBatchOps   = 500
	maxBatchBytes = 256 << 10
	// opOverhead is what one create costs in a request beside its path
	// and data: the op header, the flags, the ACL.
	opOverhead = 64
)

// Writes of a Conn are one at a time (the write semaphore), and each is
// a round trip to the server, which syncs its log before it answers: a
// node registering thousands of partitions one znode at a time spends
// its start waiting. So the writes that pile up behind the one in flight
// are done together: PublishVersion and PublishPartition queue what they
// want, and whichever of them takes the semaphore first creates every
// queued entry in a few multi-ops (createBatch). The others then find
// their entry done and return without a request. An entry that the
// multi-op cannot create (its znode is there already, its parent is
// not) is left to its own caller, which writes it alone as before.

// queueVersionLocked asks the next batch to create the version entry
// path holding data, and its db entry first when withParent. The caller
// holds mu.
func (c *Conn) queueVersionLocked(path string, data []byte, withParent bool) {
	c.vqueue[path] = queuedVersion{data: data, withParent: withParent}
}

type queuedVersion struct {
	data       []byte
	withParent bool // the db entry did not exist when last looked at
}

// queueEphemeralLocked asks the next batch to create the ephemeral
// path. The caller holds mu.
func (c *Conn) queueEphemeralLocked(path string) { c.equeue[path] = true }

// flushQueued creates what is queued, in multi-ops: version entries
// first, since replica entries are their children. Version entries it
// created are recorded in vdone, those it found there already in vfound;
// ephemerals in published. Errors are
// left to each caller's own write. The caller holds the write
// semaphore.
func (c *Conn) flushQueued() {
	c.mu.Lock()
	sess := c.zk.SessionID()
	var versions, ephemerals []*zk.CreateRequest
	parents := map[string]bool{}
	for p, q := range c.vqueue {
		if !c.pending[p] {
			continue
		}
		if dir := pathpkg.Dir(p); q.withParent && !parents[dir] {
			parents[dir] = true
			versions = append(versions, &zk.CreateRequest{Path: dir, Acl: c.acl.forPath(dir), Flags: zk.FlagPersistent})
		}
		versions = append(versions, &zk.CreateRequest{Path: p, Data: q.data, Acl: c.acl.forPath(p), Flags: zk.FlagPersistent})
	}
	for p := range c.equeue {
		if _, ok := c.parts[p]; ok && (sess == 0 || c.published[p] != sess) {
			ephemerals = append(ephemerals, &zk.CreateRequest{Path: p, Acl: c.acl.forPath(p), Flags: zk.FlagEphemeral})
		}
	}
	clear(c.vqueue)
	clear(c.equeue)
	c.mu.Unlock()
	if len(versions) > 0 {
		created, found, err := c.createBatch(versions)
		c.mu.Lock()
		for _, r := range created {
			if parents[r.Path] {
				continue
			}
			delete(c.pending, r.Path)
			c.vdone[r.Path] = true
		}
		for _, r := range found {
			if !parents[r.Path] {
				c.vfound[r.Path] = true
			}
		}
		c.mu.Unlock()
		if err != nil {
			return
		}
	}
	if len(ephemerals) > 0 {
		created, _, _ := c.createBatch(ephemerals)
		c.mu.Lock()
		for _, r := range created {
			c.published[r.Path] = sess
		}
		c.mu.Unlock()
	}
}

// createBatch creates the znodes of reqs in as few multi-ops as it can,
// each within maxBatchOps and maxBatchBytes, and returns those it
// created. A multi-op applies all of its operations or none, and names
// only the first that failed. So when one fails because its znode exists
// (another node was first) or its parent does not, every znode of the
// chunk is looked up at once (reads, answered without a log write, sent
// together), those that exist are left out with the one that failed,
// and the rest is tried again, a few times at most. What is left out is
// for each caller to write alone; those found there are returned too
// (found), so that their callers read them rather than try to create
// them one at a time. It stops at a connection error, returning it.
func (c *Conn) createBatch(reqs []*zk.CreateRequest) (created, found []*zk.CreateRequest, err error) {
	sort.Slice(reqs, func(i, j int) bool { return reqs[i].Path < reqs[j].Path })
	for len(reqs) > 0 {
		n, size := 0, 0
		for n < len(reqs) && n < maxBatchOps {
			s := len(reqs[n].Path) + len(reqs[n].Data) + opOverhead
			if n > 0 && size+s > maxBatchBytes {
				break
			}
			size += s
			n++
		}
		chunk := reqs[:n]
		reqs = reqs[n:]
		for attempt := 0; len(chunk) > 0 && attempt < maxAttempts; attempt++ {
			ops := make([]any, len(chunk))
			for i, r := range chunk {
				ops[i] = r
			}
			res, err := c.zk.Multi(ops...)
			if err == nil {
				created = append(created, chunk...)
				break
			}
			if isConnErr(err) {
				return created, found, err
			}
			bad := -1
			for i, r := range res {
				if i < len(chunk) && (errors.Is(r.Error, zk.ErrNodeExists) || errors.Is(r.Error, zk.ErrNoNode)) {
					bad = i
					break
				}
			}
			if bad < 0 {
				break // not a failure this knows: each caller writes its own
			}
			exists, err := c.existAll(chunk)
			if err != nil {
				return created, found, err
			}
			next := chunk[:0:0]
			for i, r := range chunk {
				if exists[i] {
					found = append(found, r)
				} else if i != bad {
					next = append(next, r)
				}
			}
			chunk = next
		}
	}
	return created, found, nil
}

// maxReads bounds the lookups existAll has in flight.
const maxReads = 64

// existAll reports which of the znodes of reqs exist, looking them up
// together.
func (c *Conn) existAll(reqs []*zk.CreateRequest) ([]bool, error) {
	out := make([]bool, len(reqs))
	errs := make([]error, len(reqs))
	sem := make(chan struct{}, maxReads)
	var wg sync.WaitGroup
	for i, r := range reqs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			out[i], _, errs[i] = c.zk.Exists(r.Path)
		}()
	}
	wg.Wait()
	return out, errors.Join(errs...)
}
