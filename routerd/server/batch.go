package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"spangle/routerd/cache"
	"spangle/routerd/proxy"
	"spangle/shared/partitioner"
	"spangle/shared/topo"
	"spangle/shared/wire"
)

// The batch lookup, POST /<db> (see wire's batch format). The version is
// chosen once, as for a single GET, so the whole answer is from one
// version and never from an older one than any earlier answer. Keys in
// the cache are answered from it; the others are grouped by partition
// and each group is one proxy.Do to the partition's replicas, with the
// hedging, budget, breakers and failover of a single GET, all groups at
// once, within a deadline that grows with the batch's keys (batchTimes). Keys a replica says it does not
// hold (wire.ReasonNotHeld) are asked of the partition's other replicas.

// upstreamBatch bounds what one request to storaged carries: storaged's
// default limits, whatever the client sent (escaping here may make keys
// longer than the client wrote them).
var upstreamBatch = wire.BatchLimits{MaxKeys: wire.DefaultBatchMaxKeys, MaxBytes: wire.DefaultBatchMaxBytes}

// batchKey is one distinct key of a batch.
type batchKey struct {
	key  string
	esc  string   // escaped as sent upstream
	raw  string   // as the client first wrote it
	more []string // its other spellings in the request, if any
}

// outcome is what became of one key.
type outcome struct {
	found      bool
	value      []byte
	reason     string // failed when not ""
	retryAfter string // of a shed
	addr       string
}

// servePost serves a POST: a batch lookup when the path names a db.
func (s *Server) servePost(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	path := r.URL.EscapedPath()
	t, err := wire.ParsePath(path)
	switch {
	case path == "/" || err == nil && t.HasKey:
		w.Header().Set("Allow", "GET, HEAD")
		httpError(w, http.StatusMethodNotAllowed, "POST only to /<db>, a batch lookup")
		return
	case err != nil:
		// As a GET of the same path: a bad name is the request's fault
		// whatever the method.
		code, msg := wire.StatusOf(err)
		httpError(w, code, msg)
		return
	}
	code := s.serveBatch(w, r, t.DB)
	s.bm.observe(code, time.Since(start))
}

// fastBatch is a batch h1fast took off net/http (h1fast.PostOptions):
// what servePost does for one, without parsing the path again. The
// client leaving is not seen there (no 499): the batch runs to its end.
func (s *Server) fastBatch(w http.ResponseWriter, r *http.Request, t wire.Target) {
	start := time.Now()
	code := s.serveBatch(w, r, t.DB)
	s.bm.observe(code, time.Since(start))
}

// batchMaxBytes is the batch body limit: the largest Content-Length
// h1fast takes for fastBatch.
func (s *Server) batchMaxBytes() int64 {
	if n := s.batchRd.Limits.MaxBytes; n > 0 {
		return n
	}
	return wire.DefaultBatchMaxBytes
}

// serveBatch answers a batch lookup of db and returns the status sent.
// Its body is read within batch_read_timeout and the router's
// batch_read_bytes; the bytes stay reserved until the answer is written.
func (s *Server) serveBatch(w http.ResponseWriter, r *http.Request, db string) int {
	parsed, release, err := wire.ReadBatchRequest(w, r, s.batchRd)
	defer release()
	if err != nil {
		switch {
		case errors.Is(err, wire.ErrBatchBusy):
			s.bm.refused.WithLabelValues("memory").Inc()
			w.Header().Set("Retry-After", "1")
		case errors.Is(err, wire.ErrBatchTimeout):
			s.bm.refused.WithLabelValues("timeout").Inc()
			s.log.Debug("batch body not received in time", zap.String("remote", r.RemoteAddr), zap.Error(err))
		}
		return httpError(w, wire.BatchStatus(err), err.Error())
	}
	s.bm.keys.Observe(float64(len(parsed)))
	c, code := s.chooseVersion(w, r, db)
	if code != 0 {
		return code
	}
	st, version, v, pinned := c.st, c.version, c.v, c.pinned
	vh := s.memo.version(version, v) // formatted once, as for a GET
	w.Header()[wire.HeaderVersion] = vh.version

	bs := s.scratch()
	defer s.putScratch(bs)
	keys := distinct(bs.keys[:0], parsed)
	bs.keys = keys
	outs := slices.Grow(bs.outs[:0], len(keys))[:len(keys)]
	bs.outs = outs
	groups := s.group(st.Map, v, db, version, keys, outs)
	// The batch's deadline grows with the keys it sends upstream; past
	// it, a group still waits on a replica that keeps answering other
	// lookups (a busy node), up to batch_timeout, which also bounds
	// retries of keys a replica did not hold.
	n := 0
	for _, g := range groups {
		n += len(g.idx)
	}
	deadline, patience := s.batchTimes(n)
	ctx, cancel := context.WithTimeout(r.Context(), patience)
	defer cancel()
	type job struct {
		g     *group
		chunk []int
	}
	var jobs []job
	for _, g := range groups {
		for _, chunk := range chunks(keys, g.idx) {
			jobs = append(jobs, job{g, chunk})
		}
	}
	// All requests at once; the last on this goroutine (a 100-key batch
	// to one replica set is one request: no goroutine, no wake-up).
	done := make(chan struct{}, len(jobs))
	for i, j := range jobs {
		if i == len(jobs)-1 {
			s.fetch(ctx, db, version, pinned, j.g.replicas, keys, j.chunk, outs, deadline, patience)
			break
		}
		go func() {
			s.fetch(ctx, db, version, pinned, j.g.replicas, keys, j.chunk, outs, deadline, patience)
			done <- struct{}{}
		}()
	}
	for range max(len(jobs)-1, 0) {
		<-done
	}
	if r.Context().Err() != nil {
		return 499 // the client left; nobody reads what we write
	}
	return s.writeBatch(w, version, vh, keys, outs, bs)
}

// batchScratch is what a batch's handling reuses from one batch to the
// next (Server.batchScratch): its slices, a few tens of KiB for 100
// keys, which each batch allocated anew.
type batchScratch struct {
	keys    []batchKey
	outs    []outcome
	raws    []string
	entries []wire.BatchEntry
}

// maxScratchKeys bounds the slices a batchScratch keeps: a batch of
// more keys (up to batch_max_keys) allocates its own.
const maxScratchKeys = 1024

func (s *Server) scratch() *batchScratch {
	if bs, ok := s.batchScratch.Get().(*batchScratch); ok {
		return bs
	}
	return &batchScratch{}
}

// putScratch keeps bs for the next batch, holding nothing of this one's
// (keys, values, answers from storaged).
func (s *Server) putScratch(bs *batchScratch) {
	if cap(bs.keys) > maxScratchKeys || cap(bs.outs) > maxScratchKeys || cap(bs.raws) > maxScratchKeys || cap(bs.entries) > maxScratchKeys {
		return
	}
	clear(bs.keys[:cap(bs.keys)])
	clear(bs.outs[:cap(bs.outs)])
	clear(bs.raws[:cap(bs.raws)])
	clear(bs.entries[:cap(bs.entries)])
	bs.keys, bs.outs, bs.raws, bs.entries = bs.keys[:0], bs.outs[:0], bs.raws[:0], bs.entries[:0]
	s.batchScratch.Put(bs)
}

// group is the keys of a batch sent to one set of replicas.
type group struct {
	replicas []string
	idx      []int // into the batch's keys
}

// group answers the keys in the cache and groups the others by the set
// of replicas of their partition: the partitions that the same nodes
// hold go in one request to them, since any of those nodes answers for
// all of them, so a batch costs a hop per replica set, not per
// partition (one storaged holding all 8 partitions of a db answers a
// batch in one request, not 8).
func (s *Server) group(m *topo.Map, v *topo.Version, db, version string, keys []batchKey, outs []outcome) []*group {
	var groups []*group
	byPart := make([]*group, v.NumPartitions)
	bySet := map[string]*group{}
	for i := range keys {
		k := &keys[i]
		if a, ok := s.cache.Cached(cache.Key{DB: db, Version: version, Key: k.key}); ok {
			outs[i] = outcome{found: a.resp.Status == http.StatusOK, value: a.resp.Body, addr: a.resp.Addr}
			continue
		}
		p := partitioner.Partition([]byte(k.key), v.NumPartitions)
		g := byPart[p]
		if g == nil {
			replicas := registered(m, v.Replicas[p])
			set := replicaSet(replicas)
			if g = bySet[set]; g == nil {
				g = &group{replicas: replicas}
				bySet[set] = g
				groups = append(groups, g)
			}
			byPart[p] = g
		}
		g.idx = append(g.idx, i)
	}
	return groups
}

// replicaSet names a set of replicas whatever their order.
func replicaSet(replicas []string) string {
	if slices.IsSorted(replicas) {
		return strings.Join(replicas, "\n")
	}
	return strings.Join(slices.Sorted(slices.Values(replicas)), "\n")
}

// batchTimes are the deadline and the patience (proxy.Request) of a
// batch sending n keys upstream: proxy_timeout + n * batch_key_timeout,
// and batch_timeout, which bounds both.
func (s *Server) batchTimes(n int) (deadline, patience time.Duration) {
	patience = max(s.opts.BatchTimeout, s.proxy.Timeout())
	deadline = min(s.proxy.Timeout()+time.Duration(n)*s.opts.BatchKeyTimeout, patience)
	return deadline, patience
}

// distinct folds the spellings of one key together, into dst's room.
// parsed holds each spelling once (wire.ParseBatch), so when no key was
// written escaped, each key once too, and no map is needed to find
// them.
func distinct(dst []batchKey, parsed []wire.BatchKey) []batchKey {
	keys := slices.Grow(dst[:0], len(parsed))[:len(parsed)]
	plain := true
	for i, p := range parsed {
		keys[i] = batchKey{key: p.Key, esc: url.PathEscape(p.Key), raw: p.Raw}
		plain = plain && p.Raw == p.Key
	}
	if plain {
		return keys
	}
	at := make(map[string]int, len(parsed))
	n := 0
	for _, k := range keys {
		if i, ok := at[k.key]; ok {
			keys[i].more = append(keys[i].more, k.raw)
			continue
		}
		at[k.key] = n
		keys[n] = k
		n++
	}
	return keys[:n]
}

// chunkKeys bounds the keys of one upstream request, below storaged's
// limit: a group's keys are split into requests of at most chunkKeys,
// of even sizes, sent at once. One request for a whole group costs the
// fewest hops, but on a node answering many big batches at once each
// request then takes long, all finish together, and for that whole
// while the node answers nothing: a batch waiting past its deadline
// would take the live node for a silent one (see "A batch's deadline"
// in docs/design.md; TestManyBusyBatches failed thousands of keys with
// whole 300-key groups). Requests of 100 keys keep a 100-key batch in
// one hop and give a busy node answers to show between.
const chunkKeys = 100

// chunks splits one group's keys into upstream requests within
// upstreamBatch and chunkKeys, of even sizes.
func chunks(keys []batchKey, idx []int) [][]int {
	per := len(idx)
	if n := (len(idx) + chunkKeys - 1) / chunkKeys; n > 1 {
		per = (len(idx) + n - 1) / n
	}
	var out [][]int
	start, size := 0, int64(0)
	for i, k := range idx {
		n := int64(len(keys[k].esc) + 1)
		if i > start && (i-start >= min(per, upstreamBatch.MaxKeys) || size+n > upstreamBatch.MaxBytes) {
			out = append(out, idx[start:i])
			start, size = i, 0
		}
		size += n
	}
	return append(out, idx[start:])
}

// fetch looks up keys[idx] on the partition's replicas and writes
// outs[idx]; each call writes only its own indexes.
// deadline and patience are the batch's (batchTimes).
func (s *Server) fetch(ctx context.Context, db, version string, pinned bool, replicas []string, keys []batchKey, idx []int, outs []outcome, deadline, patience time.Duration) {
	fail := func(idx []int, o outcome) {
		for _, i := range idx {
			outs[i] = o
		}
	}
	if len(replicas) == 0 {
		if pinned {
			fail(idx, outcome{reason: wire.FailReason(wire.StatusVersionGone, "no replica holds the key's partition of this version")})
		} else {
			fail(idx, outcome{reason: wire.FailReason(wire.StatusNoReplica, "no replica of the key's partition is known")})
		}
		return
	}
	// last holds, for a key a replica could not answer now (503), that
	// answer: it stands when no other replica is left to ask.
	last := map[int]outcome{}
	for asked := []string(nil); len(idx) > 0; {
		cands := slices.DeleteFunc(slices.Clone(replicas), func(a string) bool { return slices.Contains(asked, a) })
		if len(cands) == 0 {
			for _, i := range idx {
				if o, ok := last[i]; ok {
					outs[i] = o
				} else {
					outs[i] = outcome{reason: wire.FailReason(wire.StatusNoReplica, "no replica holds the key's partition")}
				}
			}
			return
		}
		req := &proxy.Request{DB: db, Version: version, Keys: keyBytes(keys, idx), Replicas: cands,
			Timeout: deadline, Patience: patience}
		resp, err := s.proxy.Do(ctx, req)
		if err != nil {
			fail(idx, failOutcome(err, pinned))
			return
		}
		got, entries, err := answerEntries(resp, keys, idx)
		if err == nil && got != version {
			err = fmt.Errorf("server: answer of version %q for pinned %q", got, version)
		}
		if err != nil {
			s.log.Warn("batch: bad answer from storaged", zap.String("node", resp.Addr), zap.Error(err))
			fail(idx, outcome{reason: wire.FailReason(wire.StatusNoReplica, "bad answer from "+resp.Addr)})
			return
		}
		asked = append(asked, resp.Addr)
		var again []int
		for j, i := range idx {
			e := &entries[j]
			switch {
			case e.Kind == wire.BatchFound:
				outs[i] = outcome{found: true, value: e.Value, addr: resp.Addr}
			case e.Kind == wire.BatchMissing:
				outs[i] = outcome{addr: resp.Addr}
			case e.Kind == wire.BatchFailed && e.Reason == wire.ReasonNotHeld:
				again = append(again, i)
			case e.Kind == wire.BatchFailed && wire.FailStatus(e.Reason) == wire.StatusUnavailable:
				// Shedding, or the key's block is being rebuilt there:
				// another replica may answer it.
				last[i] = outcome{reason: e.Reason, retryAfter: "1", addr: resp.Addr}
				again = append(again, i)
			case e.Kind == wire.BatchFailed:
				outs[i] = outcome{reason: e.Reason, addr: resp.Addr}
			default:
				outs[i] = outcome{reason: wire.FailReason(wire.StatusNoReplica, "key left out by "+resp.Addr)}
			}
		}
		s.bm.retried.Add(float64(len(again)))
		idx = again
	}
}

// keyBytes is keys[idx] as proxy.Request.Keys, all in one buffer.
func keyBytes(keys []batchKey, idx []int) [][]byte {
	n := 0
	for _, i := range idx {
		n += len(keys[i].key)
	}
	buf := make([]byte, 0, n)
	out := make([][]byte, len(idx))
	for j, i := range idx {
		start := len(buf)
		buf = append(buf, keys[i].key...)
		out[j] = buf[start:len(buf):len(buf)]
	}
	return out
}

// answerEntries reads storaged's answer to keys[idx]: an entry for
// each, in idx's order, from the compact form routerd asks for, or from
// the JSON of a storaged that does not offer it (an older one, during an
// upgrade). A key the JSON leaves out has an entry of kind 0.
func answerEntries(resp *proxy.Response, keys []batchKey, idx []int) (version string, entries []wire.BatchEntry, err error) {
	if mt, _, _ := strings.Cut(resp.ContentType, ";"); strings.TrimSpace(mt) == wire.ContentTypeBatchBinary {
		version, entries, err = wire.DecodeBatchBinary(resp.Body)
		if err == nil && len(entries) != len(idx) {
			err = fmt.Errorf("server: compact answer of %d keys to %d", len(entries), len(idx))
		}
		return version, entries, err
	}
	a, err := wire.DecodeBatchAnswer(resp.Body)
	if err != nil {
		return "", nil, err
	}
	missing := make(map[string]bool, len(a.Missing))
	for _, m := range a.Missing {
		missing[m] = true
	}
	entries = make([]wire.BatchEntry, len(idx))
	for j, i := range idx {
		esc := keys[i].esc
		if val, ok := a.Found[esc]; ok {
			entries[j] = wire.BatchEntry{Kind: wire.BatchFound, Value: val}
		} else if missing[esc] {
			entries[j].Kind = wire.BatchMissing
		} else if reason, ok := a.Failed[esc]; ok {
			entries[j] = wire.BatchEntry{Kind: wire.BatchFailed, Reason: reason}
		}
	}
	return a.Version, entries, nil
}

// maxPooledAnswer bounds the answer buffers kept for the next batches
// (Server.batchBufs): a 100-key answer of 100-byte values takes 16 KiB.
const maxPooledAnswer = 256 << 10

// failOutcome is the per-key form of a proxy error (see proxyStatus).
func failOutcome(err error, pinned bool) outcome {
	code, msg, retryAfter := proxyStatus(err, pinned)
	return outcome{reason: wire.FailReason(code, msg), retryAfter: retryAfter}
}

// writeBatch writes the answer. When every key failed because replicas
// shed load, the batch is 503 with Retry-After, so a client backs off
// as for a single GET; when every key failed because no replica holds
// the pinned version, it is 410, as a pinned GET; when every replica
// said the db is gone, 404 without a version, as a GET.
func (s *Server) writeBatch(w http.ResponseWriter, version string, vh versionHeaders, keys []batchKey, outs []outcome, bs *batchScratch) int {
	raws := slices.Grow(bs.raws[:0], len(keys))
	entries := slices.Grow(bs.entries[:0], len(keys))
	defer func() { bs.raws, bs.entries = raws, entries }()
	shed, gone, noDB, retryAfter := 0, 0, 0, ""
	found, missing := 0, 0
	var addrs []string
	for i, k := range keys {
		o := &outs[i]
		if o.addr != "" && !slices.Contains(addrs, o.addr) {
			addrs = append(addrs, o.addr)
		}
		var e wire.BatchEntry
		switch {
		case o.reason != "":
			e = wire.BatchEntry{Kind: wire.BatchFailed, Reason: o.reason}
			switch wire.FailStatus(o.reason) {
			case wire.StatusVersionGone:
				gone++
			case http.StatusNotFound:
				noDB++
			}
			if o.retryAfter != "" {
				shed++
				retryAfter = max(retryAfter, o.retryAfter)
			}
		case o.found:
			e = wire.BatchEntry{Kind: wire.BatchFound, Value: o.value}
			found++
		default:
			e.Kind = wire.BatchMissing
			missing++
		}
		raws = append(raws, k.raw)
		entries = append(entries, e)
		for _, raw := range k.more {
			raws = append(raws, raw)
			entries = append(entries, e)
		}
	}
	s.bm.found.Add(float64(found))
	s.bm.missing.Add(float64(missing))
	s.bm.failed.Add(float64(len(keys) - found - missing))
	h := w.Header()
	switch {
	case shed > 0 && shed == len(keys):
		h.Set("Retry-After", retryAfter)
		return httpError(w, wire.StatusUnavailable, "every replica is shedding load")
	case gone > 0 && gone == len(keys):
		return httpError(w, wire.StatusVersionGone, "no replica holds this version")
	case noDB > 0 && noDB == len(keys):
		delete(h, wire.HeaderVersion)
		return httpError(w, http.StatusNotFound, "no such db")
	}
	size := wire.BatchJSONSize(version, raws, entries)
	buf, _ := s.batchBufs.Get().(*[]byte)
	if buf == nil || cap(*buf) < size {
		buf = new([]byte)
		*buf = make([]byte, 0, size)
	}
	body := wire.AppendBatchJSON((*buf)[:0], version, raws, entries)
	defer func() {
		// The buffer is written by now; one much bigger than most
		// answers is let go.
		if cap(body) <= maxPooledAnswer {
			*buf = body[:0]
			s.batchBufs.Put(buf)
		}
	}()
	switch len(addrs) {
	case 0:
	case 1:
		h[wire.HeaderProxiedTo] = s.memo.addr(addrs[0])
	default:
		slices.Sort(addrs)
		h[wire.HeaderProxiedTo] = []string{strings.Join(addrs, ", ")}
	}
	if vh.lastModified != nil {
		h["Last-Modified"] = vh.lastModified
	}
	h["Content-Type"] = []string{wire.ContentTypeJSON}
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
	return http.StatusOK
}
